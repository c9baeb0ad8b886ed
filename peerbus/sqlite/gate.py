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
import threading
from pathlib import Path

from peerbus.errors import PeerbusError


class GateTimeout(PeerbusError):
    """Raised by `WriterGate.acquire` when the gate stayed taken until the deadline; the
    transaction runner (txn.py) turns it into BusBusyError at once, so no caller sees it."""


class WriterGate:
    """One open gate file; `acquire` / `release` around each write transaction.

    Used by one thread at a time (the connection's CapacityLimiter(1) sees to that).
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        self._held: int | None = None

    def acquire(self, *, timeout: float) -> None:
        """Take the gate, or raise GateTimeout after `timeout` seconds.

        A blocking flock is what hands the gate over at once (measured: non-blocking tries
        with sleeps of up to 2 ms let unlucky writers starve, p99.9 85 ms against 27 ms).
        It cannot time out by itself, so a contended wait blocks in a helper thread on a
        descriptor of its own; if we give up first, that thread lets go of the gate as
        soon as it gets it. A holder that dies releases the gate with its descriptors.
        """
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            self._held = self._fd
            return
        except BlockingIOError:
            pass
        fd = os.open(self.path, os.O_RDWR | os.O_CLOEXEC)
        got = threading.Event()
        guard = threading.Lock()
        abandoned = False

        def wait() -> None:
            fcntl.flock(fd, fcntl.LOCK_EX)
            with guard:
                if abandoned:
                    fcntl.flock(fd, fcntl.LOCK_UN)
                    os.close(fd)
                else:
                    got.set()

        threading.Thread(target=wait, name="peerbus-gate", daemon=True).start()
        got.wait(max(0.0, timeout))
        with guard:
            if not got.is_set():
                abandoned = True
                raise GateTimeout
        self._held = fd

    def release(self) -> None:
        held, self._held = self._held, None
        if held is None:
            return
        fcntl.flock(held, fcntl.LOCK_UN)
        if held != self._fd:
            os.close(held)

    def close(self) -> None:
        os.close(self._fd)
