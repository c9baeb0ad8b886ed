"""The host's exceptions; defined with the rest of the application's in panels/errors.py,
except the two a send meets, which never leave the send path (defined where raised).

PanelsError (panels/errors.py)
├── HostError                 a team's host cannot be started, found or reached as asked
│   ├── HostRunningError      `up` while a host of the team is already running
│   └── NoHostError           a viewer command names a team whose host never ran or is gone
├── NotQueuedError            a send cannot be queued (outbox.py); a tool error the model
│                             reads, or a refused nudge
└── SendRefused               the host's limits refuse a send (sendlimit.py); the turn's
                              outbox turns it into a NotQueuedError
"""

from __future__ import annotations

from panels.errors import HostError, HostRunningError, NoHostError

__all__ = ["HostError", "HostRunningError", "NoHostError"]
