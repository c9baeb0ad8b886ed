"""Transactions on a bus connection: BEGIN IMMEDIATE for writes, retried with back-off.

The connection runs in autocommit mode (`isolation_level=None`), so the sqlite3 module never
opens a deferred transaction behind our back; every write goes through `run_write`, which
takes the write lock up front with BEGIN IMMEDIATE. A deferred transaction that reads and
then writes can fail with SQLITE_BUSY_SNAPSHOT no matter how long it waits, which is why no
write here ever starts deferred.

`busy_timeout` lets SQLite wait for the lock itself; when even that runs out (a writer held
the lock longer), the whole transaction is retried with jittered exponential back-off until
`lock_deadline`, and only then does the caller see BusBusyError.
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

T = TypeVar("T")

_SQLITE_BUSY = 5
_SQLITE_LOCKED = 6
_SQLITE_READONLY = 8
_FIRST_DELAY = 0.01
_MAX_DELAY = 1.0


@dataclass(frozen=True)
class RetryPolicy:
    """How long to keep retrying a locked transaction, and how to wait (injectable)."""

    deadline: float = 60.0
    sleep: Callable[[float], None] = time.sleep
    monotonic: Callable[[], float] = time.monotonic
    jitter: Callable[[], float] = field(default=lambda: random.uniform(0.5, 1.0))


def is_busy(exc: sqlite3.Error) -> bool:
    """True for SQLITE_BUSY / SQLITE_LOCKED (and their extended codes): worth retrying."""
    code = getattr(exc, "sqlite_errorcode", None)
    if isinstance(code, int):
        return code & 0xFF in (_SQLITE_BUSY, _SQLITE_LOCKED)
    return "locked" in str(exc) or "busy" in str(exc)


def is_read_only(exc: sqlite3.Error) -> bool:
    """True for SQLITE_READONLY and its extended codes (a file moved or deleted under the
    connection, SQLITE_READONLY_DBMOVED, included): retrying cannot help."""
    code = getattr(exc, "sqlite_errorcode", None)
    if isinstance(code, int):
        return code & 0xFF == _SQLITE_READONLY
    return "readonly database" in str(exc)


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

    With a gate, each attempt queues on it first (see gate.py) and lets go before any
    back-off sleep, so a writer that waits for a foreign lock does not block our others.
    """
    begin = "BEGIN IMMEDIATE"
    if synchronous is not None:
        # Inside the retried attempt: on a foreign (rollback-journal) file even this
        # pragma can meet a writer's lock.
        begin = f"PRAGMA main.synchronous = {synchronous}; BEGIN IMMEDIATE"
    return _run(conn, work, begin=begin, path=path, retry=retry, gate=gate)


def run_read(
    conn: sqlite3.Connection,
    work: Callable[[sqlite3.Connection], T],
    *,
    path: Path,
    retry: RetryPolicy,
) -> T:
    """Run read-only `work` in one (deferred) transaction, so it sees one snapshot."""
    return _run(conn, work, begin="BEGIN", path=path, retry=retry)


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
    started = retry.monotonic()
    delay = _FIRST_DELAY
    attempts = 0
    while True:
        attempts += 1
        if gate is not None:
            try:
                gate.acquire(timeout=started + retry.deadline - retry.monotonic())
            except GateTimeout:
                waited = retry.monotonic() - started
                raise BusBusyError(path=path, waited=waited, attempts=attempts) from None
        try:
            return _attempt(conn, work, begin)
        except sqlite3.OperationalError as exc:
            if is_read_only(exc):
                # Said once, as an error of ours: a caller that retried would loop for good.
                raise BusGoneError(path=path, gone=not path.exists(), detail=str(exc)) from exc
            if not is_busy(exc):
                raise
            failure = exc
        finally:
            if gate is not None:
                gate.release()
        waited = retry.monotonic() - started
        if waited + delay > retry.deadline:
            raise BusBusyError(path=path, waited=waited, attempts=attempts) from failure
        retry.sleep(delay * retry.jitter())
        delay = min(delay * 2, _MAX_DELAY)


def _attempt(
    conn: sqlite3.Connection, work: Callable[[sqlite3.Connection], T], begin: str | None
) -> T:
    if begin is None:
        return work(conn)
    for statement in begin.split("; "):
        conn.execute(statement)
    try:
        result = work(conn)
        conn.execute("COMMIT")
    except BaseException:
        # Also on cancellation of the calling thread's work: never leave a transaction
        # (and its lock) open on the shared connection.
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    return result
