"""Transactions: BEGIN IMMEDIATE for writes, and the runner that retries one while busy.

A write transaction takes the write lock up front with BEGIN IMMEDIATE, so it never reads
and then fails to upgrade its lock half way (a deferred transaction that reads and then
writes can fail with SQLITE_BUSY_SNAPSHOT however long it waits). The connection runs in
autocommit mode (connect.py), so no transaction is ever opened but by `transaction` here.

`busy_timeout` lets SQLite wait for the lock itself; when even that runs out (another writer
held it longer), `run_retrying` rolls the whole transaction back and runs it again, as its
caller's `Retry` says: the turn store backs off along a fixed list and then raises its
StoreError, the bus backs off with jitter until a deadline (taking its writers' gate before
each attempt) and then raises BusBusyError. host.sqlite does not retry: it runs
`transaction` once.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import Protocol, TypeVar

T = TypeVar("T")

IMMEDIATE = "BEGIN IMMEDIATE"
"""Every write transaction's BEGIN."""
DEFERRED = "BEGIN"
"""A read transaction's BEGIN: several queries see one snapshot."""

# Primary result codes: the low byte of an extended one.
_BUSY = (5, 6)  # SQLITE_BUSY, SQLITE_LOCKED
_READONLY = 8  # SQLITE_READONLY
_CORRUPT = (11, 26)  # SQLITE_CORRUPT, SQLITE_NOTADB


def _code(exc: sqlite3.Error) -> int | None:
    code = getattr(exc, "sqlite_errorcode", None)
    return code & 0xFF if isinstance(code, int) else None


def is_busy(exc: sqlite3.Error) -> bool:
    """True for SQLITE_BUSY / SQLITE_LOCKED (and their extended codes): worth retrying."""
    code = _code(exc)
    if code is not None:
        return code in _BUSY
    return "locked" in str(exc) or "busy" in str(exc)


def is_read_only(exc: sqlite3.Error) -> bool:
    """True for SQLITE_READONLY and its extended codes (a file moved or deleted under the
    connection, SQLITE_READONLY_DBMOVED, included): retrying cannot help."""
    code = _code(exc)
    if code is not None:
        return code == _READONLY
    return "readonly database" in str(exc)


def is_corrupt(exc: sqlite3.Error) -> bool:
    """True when the file is not a usable database (corrupt, or not SQLite at all)."""
    return _code(exc) in _CORRUPT or "malformed" in str(exc) or "not a database" in str(exc)


def transaction(
    conn: sqlite3.Connection,
    work: Callable[[sqlite3.Connection], T],
    begin: str | None = IMMEDIATE,
) -> T:
    """Run `work` between `begin` and COMMIT, once; rolled back if anything escapes it.

    `begin` may be several statements joined by "; " (the bus sets `synchronous` first: it
    cannot change inside a transaction); None runs `work` outside any transaction (pragmas,
    ATTACH)."""
    if begin is None:
        return work(conn)
    for statement in begin.split("; "):
        conn.execute(statement)
    try:
        result = work(conn)
        conn.execute("COMMIT")
    except BaseException:
        # Also on cancellation or KeyboardInterrupt: never leave a transaction (and its
        # lock) open on the shared connection, nor anything half-written.
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    return result


class Retry(Protocol):
    """What one caller does while the file stays busy. One per `run_retrying` call: it may
    keep state across the attempts (a deadline, the next delay)."""

    def before(self, attempt: int) -> None:
        """Called before each attempt (1, 2, ...): the bus queues on its writers' gate.
        May raise to give up."""

    def after(self, attempt: int) -> None:
        """Called after each attempt, however it ended: the bus lets go of its gate."""

    def wait(self, attempt: int, busy: sqlite3.OperationalError) -> None:
        """The attempt met a lock and was rolled back: sleep before the next, or raise
        (from `busy`) to give up."""


def run_retrying(
    conn: sqlite3.Connection,
    work: Callable[[sqlite3.Connection], T],
    begin: str | None,
    retry: Retry,
) -> T:
    """`transaction(conn, work, begin)`, run again whole while it meets another writer's
    lock, as `retry` says. Any other error is raised at once."""
    attempt = 0
    while True:
        attempt += 1
        retry.before(attempt)
        try:
            return transaction(conn, work, begin)
        except sqlite3.OperationalError as exc:
            if not is_busy(exc):
                raise
            busy = exc
        finally:
            retry.after(attempt)
        retry.wait(attempt, busy)
