"""The connection to `turns.sqlite`: pragmas, transactions with busy retry, error translation.

Every write runs inside `BEGIN IMMEDIATE`, so a transaction takes the write lock before it reads
anything and can never fail half way with a lock upgrade. When another process holds the lock
past `busy_timeout`, the whole transaction is rolled back and run again after a back-off; if the
lock is still held after the last attempt the caller gets a StoreError that says which file is
busy and what to do, never SQLite's bare "database is locked".
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from runtime.debuglog import DebugLog
from runtime.errors import StoreCorruptError, StoreError

T = TypeVar("T")

# Primary result codes (the low byte of an extended code).
_BUSY = {5, 6}  # SQLITE_BUSY, SQLITE_LOCKED
_CORRUPT = {11, 26}  # SQLITE_CORRUPT, SQLITE_NOTADB


@dataclass(frozen=True)
class RetryPolicy:
    """How long to wait for another writer: SQLite's own wait, then our back-offs."""

    busy_timeout_ms: int = 5_000
    backoff_seconds: tuple[float, ...] = (0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0)
    sleep: Callable[[float], None] = time.sleep


DEFAULT_RETRY = RetryPolicy()


def connect(path: Path, policy: RetryPolicy) -> sqlite3.Connection:
    """Open `path` in autocommit mode (we issue BEGIN ourselves), usable from worker threads."""
    # check_same_thread=False: the async wrapper runs each call on some worker thread, one at a
    # time (CapacityLimiter(1)), so the connection is never used by two threads at once.
    with translate_errors(path):
        conn = sqlite3.connect(
            path,
            timeout=policy.busy_timeout_ms / 1000,
            isolation_level=None,
            check_same_thread=False,
        )
    conn.execute(f"PRAGMA busy_timeout = {int(policy.busy_timeout_ms)}")
    return conn


def connect_read_only(path: Path, policy: RetryPolicy) -> sqlite3.Connection:
    """Open an existing `path` so that nothing can write through this connection: the file is
    opened read-only (`mode=ro`; never created) and the connection refuses writes."""
    with translate_errors(path):
        conn = sqlite3.connect(
            f"{path.resolve().as_uri()}?mode=ro",
            uri=True,
            timeout=policy.busy_timeout_ms / 1000,
            isolation_level=None,
            check_same_thread=False,
        )
    conn.execute(f"PRAGMA busy_timeout = {int(policy.busy_timeout_ms)}")
    conn.execute("PRAGMA query_only = ON")
    return conn


def set_durable_pragmas(conn: sqlite3.Connection, path: Path, debug: DebugLog | None) -> None:
    """WAL so readers never block the writer; FULL sync because the bus acks after our commit."""
    mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
    if str(mode).lower() != "wal" and debug is not None:
        debug.write("warning", "store_not_wal", path=str(path), journal_mode=mode)
    # With synchronous=NORMAL a power cut could drop a committed turn whose bus messages were
    # already acked, losing them; FULL makes a commit durable before the ack happens.
    conn.execute("PRAGMA synchronous = FULL")


def check_integrity(
    conn: sqlite3.Connection, path: Path, *, policy: RetryPolicy, debug: DebugLog | None
) -> None:
    """Raise StoreCorruptError unless the file is a readable, structurally sound database."""

    def quick_check(c: sqlite3.Connection) -> Any:
        return c.execute("PRAGMA quick_check(1)").fetchone()

    result = run_read(conn, quick_check, path=path, policy=policy, debug=debug)
    if result is None or result[0] != "ok":
        detail = result[0] if result else "no answer"
        raise corrupt_error(path, f"integrity check failed: {detail}")


def run_write(
    conn: sqlite3.Connection,
    fn: Callable[[sqlite3.Connection], T],
    *,
    path: Path,
    policy: RetryPolicy,
    debug: DebugLog | None,
) -> T:
    """Run `fn` in one `BEGIN IMMEDIATE` transaction; retried whole while the file is busy."""
    return _retrying(conn, fn, "BEGIN IMMEDIATE", path=path, policy=policy, debug=debug)


def run_read(
    conn: sqlite3.Connection,
    fn: Callable[[sqlite3.Connection], T],
    *,
    path: Path,
    policy: RetryPolicy,
    debug: DebugLog | None,
) -> T:
    """Run `fn` in one read transaction, so several queries see the same state."""
    return _retrying(conn, fn, "BEGIN", path=path, policy=policy, debug=debug)


def run_untransacted(
    conn: sqlite3.Connection,
    fn: Callable[[sqlite3.Connection], T],
    *,
    path: Path,
    policy: RetryPolicy,
    debug: DebugLog | None,
) -> T:
    """Run `fn` outside any transaction (pragmas such as journal_mode), retried while busy."""
    return _retrying(conn, fn, None, path=path, policy=policy, debug=debug)


def _retrying(
    conn: sqlite3.Connection,
    fn: Callable[[sqlite3.Connection], T],
    begin: str | None,
    *,
    path: Path,
    policy: RetryPolicy,
    debug: DebugLog | None,
) -> T:
    delays = (*policy.backoff_seconds, None)
    for attempt, delay in enumerate(delays, start=1):
        try:
            with translate_errors(path, retry_busy=True):
                return _attempt(conn, fn, begin)
        except _Busy as busy:
            if delay is None:
                raise StoreError(
                    f"{path} stayed busy: another process held its write lock through "
                    f"{attempt} attempts. Stop the other mnemara process using this instance "
                    "(`mnemara ps` lists them) and try again; nothing was written.",
                    path=path,
                ) from busy.__cause__
            if debug is not None:
                debug.write("warning", "store_busy_retry", path=str(path), attempt=attempt)
            policy.sleep(delay)
    raise AssertionError("unreachable: the last delay is None")


def _attempt(
    conn: sqlite3.Connection, fn: Callable[[sqlite3.Connection], T], begin: str | None
) -> T:
    if begin is None:
        return fn(conn)
    conn.execute(begin)
    try:
        result = fn(conn)
        conn.execute("COMMIT")
    except BaseException:
        # Also on cancellation or KeyboardInterrupt: nothing half-written stays.
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    return result


class _Busy(Exception):
    """Internal: the file was busy; the transaction was rolled back and may be retried."""


def corrupt_error(path: Path, detail: str) -> StoreCorruptError:
    return StoreCorruptError(
        f"{path} is not a usable SQLite database ({detail}). It has not been modified. "
        "Restore it from a backup, or move it aside and rebuild the window from an export "
        "with `mnemara import`.",
        path=path,
    )


@contextmanager
def translate_errors(path: Path, *, retry_busy: bool = False) -> Iterator[None]:
    """Turn sqlite3 errors into the runtime's StoreError tree (or _Busy, to be retried)."""
    try:
        yield
    except sqlite3.Error as exc:
        code = (getattr(exc, "sqlite_errorcode", None) or 0) & 0xFF
        if code in _BUSY:
            if retry_busy:
                raise _Busy() from exc
            raise StoreError(
                f"{path} is busy: another process is writing to it. Try again in a moment.",
                path=path,
            ) from exc
        if code in _CORRUPT or "malformed" in str(exc) or "not a database" in str(exc):
            raise corrupt_error(path, str(exc)) from exc
        raise StoreError(f"{path}: {exc}", path=path) from exc
