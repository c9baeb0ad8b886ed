"""The host's exceptions, under the runtime's root so the CLI reports them as it does others.

MnemaraError (runtime/errors.py)
└── HostError                 a team's host cannot be started, found or reached as asked
    ├── HostRunningError      `up` while a host of the team is already running
    └── NoHostError           a viewer command names a team whose host never ran or is gone
"""

from __future__ import annotations

from runtime.errors import MnemaraError


class HostError(MnemaraError):
    """Raised when a team's host cannot be started, found or reached as asked."""

    def __init__(self, message: str, *, team: str) -> None:
        super().__init__(message)
        self.team = team


class HostRunningError(HostError):
    """Raised by `up` when the team's host.pid names a live process."""


class NoHostError(HostError):
    """Raised when a team has no host state (never started) or no running host."""
