"""The one transaction runner: BEGIN ... COMMIT or nothing, and retried only while busy."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from sqlitekit.connect import connect, use_wal
from sqlitekit.txn import is_busy, run_retrying, transaction


class Recorded:
    """A Retry that records its calls; gives up (re-raising) after `tries` attempts."""

    def __init__(self, tries: int, on_wait: Callable[[int], None] = lambda _: None) -> None:
        self.tries = tries
        self.on_wait = on_wait
        self.calls: list[tuple[str, int]] = []

    def before(self, attempt: int) -> None:
        self.calls.append(("before", attempt))

    def after(self, attempt: int) -> None:
        self.calls.append(("after", attempt))

    def wait(self, attempt: int, busy: sqlite3.OperationalError) -> None:
        assert is_busy(busy)
        self.calls.append(("wait", attempt))
        if attempt >= self.tries:
            raise busy
        self.on_wait(attempt)


@pytest.fixture
def db(tmp_path: Path) -> sqlite3.Connection:
    conn = connect(tmp_path / "t.sqlite", busy_timeout=0.001)
    assert use_wal(conn) == "wal"
    conn.execute("CREATE TABLE t (n INTEGER)")
    return conn


def test_a_failed_transaction_leaves_nothing_and_no_open_transaction(
    db: sqlite3.Connection,
) -> None:
    def half(c: sqlite3.Connection) -> None:
        c.execute("INSERT INTO t VALUES (1)")
        raise KeyboardInterrupt  # cancellation too rolls back

    with pytest.raises(KeyboardInterrupt):
        transaction(db, half)
    assert not db.in_transaction
    assert db.execute("SELECT count(*) FROM t").fetchone() == (0,)
    transaction(db, lambda c: c.execute("INSERT INTO t VALUES (2)"))
    assert db.execute("SELECT n FROM t").fetchall() == [(2,)]


def test_several_begin_statements_run_in_order(db: sqlite3.Connection) -> None:
    seen: list[str] = []
    db.set_trace_callback(seen.append)
    transaction(db, lambda c: None, "PRAGMA main.synchronous = FULL; BEGIN IMMEDIATE")
    assert seen == ["PRAGMA main.synchronous = FULL", "BEGIN IMMEDIATE", "COMMIT"]


def test_a_busy_file_is_retried_until_the_lock_goes(tmp_path: Path, db: sqlite3.Connection) -> None:
    other = sqlite3.connect(tmp_path / "t.sqlite", isolation_level=None)
    other.execute("BEGIN IMMEDIATE")

    def back_off(attempt: int) -> None:
        if attempt == 2:
            other.execute("COMMIT")  # the other writer lets go while we back off

    retry = Recorded(tries=10, on_wait=back_off)
    run_retrying(db, lambda c: c.execute("INSERT INTO t VALUES (1)"), "BEGIN IMMEDIATE", retry)
    assert retry.calls == [
        ("before", 1), ("after", 1), ("wait", 1),
        ("before", 2), ("after", 2), ("wait", 2),
        ("before", 3), ("after", 3),
    ]  # fmt: skip
    assert db.execute("SELECT n FROM t").fetchall() == [(1,)]
    other.close()


def test_giving_up_is_the_callers_and_nothing_is_written(
    tmp_path: Path, db: sqlite3.Connection
) -> None:
    other = sqlite3.connect(tmp_path / "t.sqlite", isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    retry = Recorded(tries=3)
    with pytest.raises(sqlite3.OperationalError, match="locked"):
        run_retrying(db, lambda c: c.execute("INSERT INTO t VALUES (1)"), "BEGIN IMMEDIATE", retry)
    assert [c for c in retry.calls if c[0] == "wait"] == [("wait", 1), ("wait", 2), ("wait", 3)]
    other.execute("ROLLBACK")
    assert not db.in_transaction
    assert db.execute("SELECT count(*) FROM t").fetchone() == (0,)
    other.close()


def test_an_error_that_is_not_busy_is_raised_at_once(db: sqlite3.Connection) -> None:
    retry = Recorded(tries=10)
    with pytest.raises(sqlite3.OperationalError, match="no such table"):
        run_retrying(db, lambda c: c.execute("INSERT INTO nowhere VALUES (1)"), "BEGIN", retry)
    assert retry.calls == [("before", 1), ("after", 1)]


def test_a_read_only_connection_refuses_writes_and_never_creates(tmp_path: Path) -> None:
    with pytest.raises(sqlite3.OperationalError):
        connect(tmp_path / "absent.sqlite", busy_timeout=1, read_only=True)
    assert not (tmp_path / "absent.sqlite").exists()
    writer = connect(tmp_path / "t.sqlite", busy_timeout=1)
    writer.execute("CREATE TABLE t (n INTEGER)")
    reader = connect(tmp_path / "t.sqlite", busy_timeout=1, read_only=True)
    with pytest.raises(sqlite3.OperationalError, match=r"readonly|read-only"):
        reader.execute("INSERT INTO t VALUES (1)")
    assert reader.execute("SELECT count(*) FROM t").fetchone() == (0,)
    reader.close()
    writer.close()
