"""The connection to `turns.sqlite`: pragmas, the store's retry policy, error translation.

Every write runs inside `BEGIN IMMEDIATE` (sqlitekit.txn), so a transaction takes the write
lock before it reads anything and can never fail half way with a lock upgrade. When another
process holds the lock past `busy_timeout`, the whole transaction is rolled back and run again
after a back-off (the store's: a fixed list of delays, each logged); if the lock is still held
after the last attempt the caller gets a StoreError that says which file is busy and what to
do, never SQLite's bare "database is locked".
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from runtime.errors import StoreCorruptError, StoreError
from runtime.instance.debuglog import DebugLog
from sqlitekit import connect as kit
from sqlitekit.txn import DEFERRED, IMMEDIATE, is_busy, is_corrupt, run_retrying

T = TypeVar("T")


@dataclass(frozen=True)
class RetryPolicy:
    """How long to wait for another writer: SQLite's own wait, then our back-offs."""

    busy_timeout_ms: int = 5_000
    backoff_seconds: tuple[float, ...] = (0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0)
    sleep: Callable[[float], None] = time.sleep


DEFAULT_RETRY = RetryPolicy()


def connect(path: Path, policy: RetryPolicy) -> sqlite3.Connection:
    """Open `path` in autocommit mode (we issue BEGIN ourselves), usable from worker threads."""
    with translate_errors(path):
        conn = kit.connect(path, busy_timeout=policy.busy_timeout_ms / 1000)
    conn.execute(f"PRAGMA busy_timeout = {int(policy.busy_timeout_ms)}")
    return conn


def connect_read_only(path: Path, policy: RetryPolicy) -> sqlite3.Connection:
    """Open an existing `path` so that nothing can write through this connection: the file is
    opened read-only (`mode=ro`; never created) and the connection refuses writes."""
    with translate_errors(path):
        conn = kit.connect(path, busy_timeout=policy.busy_timeout_ms / 1000, read_only=True)
    conn.execute(f"PRAGMA busy_timeout = {int(policy.busy_timeout_ms)}")
    return conn


def set_durable_pragmas(conn: sqlite3.Connection, path: Path, debug: DebugLog | None) -> None:
    """WAL so readers never block the writer; FULL sync because the bus acks after our commit."""
    mode = kit.use_wal(conn)
    if mode.lower() != "wal" and debug is not None:
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
    return _retrying(conn, fn, IMMEDIATE, path=path, policy=policy, debug=debug)


def run_read(
    conn: sqlite3.Connection,
    fn: Callable[[sqlite3.Connection], T],
    *,
    path: Path,
    policy: RetryPolicy,
    debug: DebugLog | None,
) -> T:
    """Run `fn` in one read transaction, so several queries see the same state."""
    return _retrying(conn, fn, DEFERRED, path=path, policy=policy, debug=debug)


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
    with translate_errors(path):
        return run_retrying(conn, fn, begin, _Backoff(path, policy, debug))


@dataclass(frozen=True)
class _Backoff:
    """The store's `sqlitekit.txn.Retry`: the policy's delays in turn, each logged, then a
    StoreError that names the file."""

    path: Path
    policy: RetryPolicy
    debug: DebugLog | None

    def before(self, attempt: int) -> None:
        pass

    def after(self, attempt: int) -> None:
        pass

    def wait(self, attempt: int, busy: sqlite3.OperationalError) -> None:
        delays = self.policy.backoff_seconds
        if attempt > len(delays):
            raise StoreError(
                f"{self.path} stayed busy: another process held its write lock through "
                f"{attempt} attempts. Stop the other mnemara process using this instance "
                "(`mnemara ps` lists them) and try again; nothing was written.",
                path=self.path,
            ) from busy
        if self.debug is not None:
            self.debug.write("warning", "store_busy_retry", path=str(self.path), attempt=attempt)
        self.policy.sleep(delays[attempt - 1])


def corrupt_error(path: Path, detail: str) -> StoreCorruptError:
    return StoreCorruptError(
        f"{path} is not a usable SQLite database ({detail}). It has not been modified. "
        "Restore it from a backup, or move it aside and rebuild the window from an export "
        "with `mnemara import`.",
        path=path,
    )


@contextmanager
def translate_errors(path: Path) -> Iterator[None]:
    """Turn sqlite3 errors into the runtime's StoreError tree."""
    try:
        yield
    except sqlite3.Error as exc:
        if is_busy(exc):
            raise StoreError(
                f"{path} is busy: another process is writing to it. Try again in a moment.",
                path=path,
            ) from exc
        if is_corrupt(exc):
            raise corrupt_error(path, str(exc)) from exc
        raise StoreError(f"{path}: {exc}", path=path) from exc
