"""The bus's transactions: sqlitekit's runner with the bus's back-off, gate and errors.

Every write goes through `run_write`, BEGIN IMMEDIATE (sqlitekit.txn says why no write here
ever starts deferred). `busy_timeout` lets SQLite wait for the lock itself; when even that
runs out (a writer held the lock longer), the whole transaction is retried with jittered
exponential back-off until `lock_deadline`, and only then does the caller see BusBusyError.
With the writers' gate (gate.py), each attempt queues on it first and lets go before any
back-off sleep, so a writer that waits for a foreign lock does not block our others. A file
moved or deleted under the connection (SQLITE_READONLY) is BusGoneError at once.
"""

from __future__ import annotations

import random
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from peerbus.errors import BusBusyError, BusGoneError
from peerbus.sqlite.gate import GateTimeout, WriterGate
from sqlitekit.txn import DEFERRED, IMMEDIATE, is_read_only, run_retrying

T = TypeVar("T")

_FIRST_DELAY = 0.01
_MAX_DELAY = 1.0


@dataclass(frozen=True)
class RetryPolicy:
    """How long to keep retrying a locked transaction, and how to wait (injectable)."""

    deadline: float = 60.0
    sleep: Callable[[float], None] = time.sleep
    monotonic: Callable[[], float] = time.monotonic
    jitter: Callable[[], float] = field(default=lambda: random.uniform(0.5, 1.0))


def run_write(
    conn: sqlite3.Connection,
    work: Callable[[sqlite3.Connection], T],
    *,
    path: Path,
    retry: RetryPolicy,
    gate: WriterGate | None = None,
    synchronous: str | None = None,
) -> T:
    """Run `work` inside BEGIN IMMEDIATE ... COMMIT, retrying the whole of it while busy.

    `synchronous` (FULL / NORMAL) is set on the connection just before BEGIN: it cannot
    change inside a transaction.
    """
    begin = IMMEDIATE
    if synchronous is not None:
        # Inside the retried attempt: on a foreign (rollback-journal) file even this
        # pragma can meet a writer's lock.
        begin = f"PRAGMA main.synchronous = {synchronous}; {IMMEDIATE}"
    return _run(conn, work, begin=begin, path=path, retry=retry, gate=gate)


def run_read(
    conn: sqlite3.Connection,
    work: Callable[[sqlite3.Connection], T],
    *,
    path: Path,
    retry: RetryPolicy,
) -> T:
    """Run read-only `work` in one (deferred) transaction, so it sees one snapshot."""
    return _run(conn, work, begin=DEFERRED, path=path, retry=retry)


def run_bare(
    conn: sqlite3.Connection,
    work: Callable[[sqlite3.Connection], T],
    *,
    path: Path,
    retry: RetryPolicy,
) -> T:
    """Run `work` outside any transaction (pragmas, ATTACH), retrying while busy.

    In rollback-journal mode (a foreign file) even a pragma that reads the schema can meet
    a writer's lock, so these retry too.
    """
    return _run(conn, work, begin=None, path=path, retry=retry)


def _run(
    conn: sqlite3.Connection,
    work: Callable[[sqlite3.Connection], T],
    *,
    begin: str | None,
    path: Path,
    retry: RetryPolicy,
    gate: WriterGate | None = None,
) -> T:
    try:
        return run_retrying(conn, work, begin, _Deadline(path, retry, gate))
    except sqlite3.OperationalError as exc:
        if is_read_only(exc):
            # Said once, as an error of ours: a caller that retried would loop for good.
            raise BusGoneError(path=path, gone=not path.exists(), detail=str(exc)) from exc
        raise


class _Deadline:
    """The bus's `sqlitekit.txn.Retry` for one transaction: the gate around each attempt,
    jittered doubling delays, BusBusyError once the next wait would pass the deadline."""

    def __init__(self, path: Path, retry: RetryPolicy, gate: WriterGate | None) -> None:
        self._path = path
        self._retry = retry
        self._gate = gate
        self._started = retry.monotonic()
        self._delay = _FIRST_DELAY

    def before(self, attempt: int) -> None:
        if self._gate is None:
            return
        retry = self._retry
        try:
            self._gate.acquire(timeout=self._started + retry.deadline - retry.monotonic())
        except GateTimeout:
            waited = retry.monotonic() - self._started
            raise BusBusyError(path=self._path, waited=waited, attempts=attempt) from None

    def after(self, attempt: int) -> None:
        if self._gate is not None:
            self._gate.release()

    def wait(self, attempt: int, busy: sqlite3.OperationalError) -> None:
        waited = self._retry.monotonic() - self._started
        if waited + self._delay > self._retry.deadline:
            raise BusBusyError(path=self._path, waited=waited, attempts=attempt) from busy
        self._retry.sleep(self._delay * self._retry.jitter())
        self._delay = min(self._delay * 2, _MAX_DELAY)
