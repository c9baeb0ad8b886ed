"""The writers' gate: an flock that peerbus processes take before BEGIN IMMEDIATE.

SQLite's busy handler sleeps in coarse steps (1, 2, 5, 10, ... 100 ms) while the write
lock is taken, so under contention a waiter often sleeps long after the lock came free:
measured with 8 consumers and a producer at 200 messages/s, claim p99 went to ~100 ms.
Queueing on an flock first hands the lock over within a fraction of a millisecond, and
BEGIN IMMEDIATE then finds SQLite's lock free. Writers that do not use the gate (another
program on a foreign file) are still handled by SQLite's lock and our retries.

The gate is a separate file (`<state file>.writers`), never the database or its -shm:
closing any descriptor of a file drops every POSIX lock the process holds on it, which
would silently release SQLite's own locks.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Callable
from pathlib import Path

_FIRST_WAIT = 0.0002
_LONGEST_WAIT = 0.002


class GateTimeout(Exception):
    """The gate stayed taken until the deadline (turned into BusBusyError by the caller)."""


class WriterGate:
    """One open gate file; `acquire` / `release` around each write transaction."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)

    def acquire(
        self, *, until: float, monotonic: Callable[[], float], sleep: Callable[[float], None]
    ) -> None:
        """Take the gate, or raise GateTimeout once monotonic() passes `until`.

        Non-blocking tries with short sleeps rather than a blocking flock, so that a process
        stopped while holding the gate cannot hang us past the deadline.
        """
        wait = _FIRST_WAIT
        while True:
            try:
                fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                if monotonic() >= until:
                    raise GateTimeout from None
                sleep(wait)
                wait = min(wait * 2, _LONGEST_WAIT)

    def release(self) -> None:
        fcntl.flock(self._fd, fcntl.LOCK_UN)

    def close(self) -> None:
        os.close(self._fd)
