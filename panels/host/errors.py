"""The host's exceptions; defined with the rest of the application's in panels/errors.py.

PanelsError (panels/errors.py)
└── HostError                 a team's host cannot be started, found or reached as asked
    ├── HostRunningError      `up` while a host of the team is already running
    └── NoHostError           a viewer command names a team whose host never ran or is gone
"""

from __future__ import annotations

from panels.errors import HostError, HostRunningError, NoHostError

__all__ = ["HostError", "HostRunningError", "NoHostError"]
