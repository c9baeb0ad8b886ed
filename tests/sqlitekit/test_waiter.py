"""The change waiter on a plain database, without recipients or signals (as host.sqlite
uses it): another connection's commit wakes it, by the files or by the data_version
backstop, and a bump in this process wakes it at once."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import anyio
import pytest

from sqlitekit.connect import connect, use_wal
from sqlitekit.txn import transaction
from sqlitekit.waiter import ChangeWaiter, WatchOptions
from sqlitekit.watch import Signature, data_versions, watched_paths

pytestmark = pytest.mark.anyio
WOKEN = 30.0  # a generous bound for a wake that must come
NOT_WOKEN = 0.5  # how long a waiter must stay asleep


def open_db(path: Path) -> sqlite3.Connection:
    conn = connect(path, busy_timeout=5.0)
    use_wal(conn)
    conn.execute("CREATE TABLE IF NOT EXISTS t (n INTEGER)")
    return conn


def waiter_on(conn: sqlite3.Connection, watched: Path, options: WatchOptions) -> ChangeWaiter:
    """A waiter on the files of `watched`, asking `conn` for data_version as its backstop."""

    async def versions() -> Signature:
        return data_versions(conn, ("main",))

    return ChangeWaiter(watched_paths(watched), options, versions)


async def test_another_connections_commit_wakes_the_waiter(
    anyio_backend: str, tmp_path: Path
) -> None:
    path = tmp_path / "host.sqlite"
    mine, theirs = open_db(path), open_db(path)
    # No backstop within the test: only the files (inotify, or stats) can wake it.
    waiter = waiter_on(mine, path, WatchOptions(poll_interval=0.005, backstop_interval=600))
    since = await waiter.refresh()
    with anyio.move_on_after(NOT_WOKEN) as quiet:
        await waiter.wait_past(since)
    assert quiet.cancelled_caught, "nothing was committed: the waiter must sleep"
    transaction(theirs, lambda c: c.execute("INSERT INTO t VALUES (1)"))
    with anyio.fail_after(WOKEN):
        await waiter.wait_past(since)
    assert waiter.generation > since
    waiter.close()
    mine.close()
    theirs.close()


async def test_a_bump_wakes_a_parked_waiter(anyio_backend: str, tmp_path: Path) -> None:
    path = tmp_path / "host.sqlite"
    conn = open_db(path)
    waiter = waiter_on(conn, path, WatchOptions(poll_interval=0.005, backstop_interval=600))
    since = await waiter.refresh()
    with anyio.fail_after(WOKEN):  # the task group ends once the parked waiter returns
        async with anyio.create_task_group() as tg:
            tg.start_soon(waiter.wait_past, since)
            await anyio.sleep(0.05)  # parked by now
            waiter.bump()
    assert waiter.mark(None) == since + 1
    waiter.close()
    conn.close()


async def test_the_backstop_alone_notices_a_commit(anyio_backend: str, tmp_path: Path) -> None:
    """With the files unwatched (a commit nothing announced), data_version still shows it."""
    path = tmp_path / "host.sqlite"
    mine, theirs = open_db(path), open_db(path)
    elsewhere = tmp_path / "elsewhere.sqlite"  # the watched files never move
    waiter = waiter_on(mine, elsewhere, WatchOptions(poll_interval=0.005, backstop_interval=0.05))
    since = await waiter.refresh()
    transaction(theirs, lambda c: c.execute("INSERT INTO t VALUES (1)"))
    with anyio.fail_after(WOKEN):
        await waiter.wait_past(since)
    waiter.close()
    mine.close()
    theirs.close()
