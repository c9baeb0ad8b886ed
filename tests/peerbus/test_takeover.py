"""Taking a panel over from the original mnemara on a shared table: no history flood.

The original keeps one watermark per instance (`<instance>/peer_poll_watermark`) and on
first enable starts after the highest id in the table. A route registered here for the
first time does the same, takes the original's watermark over when it is given, and
replays the backlog only when asked. And a second consumer of the same panel is warned
about, since a shared table cannot stop it from taking the same rows.
"""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path

import pytest

import peerbus as pb
import peerbus.sqlite as sq

pytestmark = pytest.mark.anyio

SEVEN = """CREATE TABLE returns (
    id INTEGER PRIMARY KEY AUTOINCREMENT, agent_role TEXT, recipient_role TEXT,
    task_id TEXT, payload_json TEXT, status TEXT DEFAULT 'pending', submitted_at TEXT)"""


def _sql(path: Path, sql: str, *args: object) -> int:
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        return int(conn.execute(sql, args).lastrowid or 0)
    finally:
        conn.close()


def _row(path: Path, recipient: str | None, n: int, sender: str = "a") -> int:
    """A row as the original's submit tool writes it."""
    return _sql(
        path,
        """INSERT INTO returns (agent_role, recipient_role, payload_json, status, submitted_at)
           VALUES (?, ?, ?, 'pending', datetime('now'))""",
        sender,
        recipient,
        f'{{"n": {n}}}',
    )


@pytest.fixture
def table(tmp_path: Path) -> Path:
    """A table the original has used: direct rows for b and broadcasts, ids 1..6."""
    path = tmp_path / "returns.db"
    _sql(path, SEVEN)
    for n in range(3):
        _row(path, "b", n)
        _row(path, None, n)
    return path


async def _take(bus: sq.Bus) -> tuple[int, ...]:
    claim = await bus.claim("b", senders=["a"])
    await bus.ack(claim)
    return claim.ids


async def test_an_original_watermark_means_no_history(table: Path, tmp_path: Path) -> None:
    mark = tmp_path / "peer_poll_watermark"
    mark.write_text("4\n")
    async with pb.open_bus(table, durable=False) as bus:
        start = pb.read_original_watermark(mark)
        await bus.register("b", senders=["a"], start_after=start)
        assert await _take(bus) == (5, 6)  # nor the broadcasts at or below 4
        new = _row(table, "b", 9)
        assert await _take(bus) == (new,)


async def test_first_enable_skips_the_backlog_and_says_so(
    table: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async with pb.open_bus(table, durable=False) as bus:
        with caplog.at_level(logging.WARNING, logger="peerbus"):
            assert await bus.register("b", senders=["a"], take_over=True) == 1
        assert "starts after id 6, the highest in the table at first enable" in caplog.text
        assert await _take(bus) == ()
        new = [_row(table, "b", 7), _row(table, None, 8)]
        # A restart registers again: the start is kept, nothing new is skipped.
        assert await bus.register("b", senders=["a"], take_over=True) == 2
        assert await _take(bus) == tuple(new)


async def test_without_take_over_a_new_route_gets_every_row(table: Path) -> None:
    async with pb.open_bus(table, durable=False) as bus:
        await bus.register("b", senders=["a"])
        assert await _take(bus) == (1, 2, 3, 4, 5, 6)


async def test_replay_flag_delivers_the_backlog(table: Path) -> None:
    async with pb.open_bus(table, durable=False) as bus:
        await bus.register("b", senders=["a"], take_over=True, replay_backlog=True)
        assert await _take(bus) == (1, 2, 3, 4, 5, 6)


async def test_an_owned_bus_still_starts_from_the_first_row(tmp_path: Path) -> None:
    async with pb.open_bus(tmp_path / "own.db", durable=False) as bus:
        first = await bus.submit("a", "b", {"n": 1})
        await bus.register("b", senders=["a"], take_over=True)
        assert await _take(bus) == (first,)


async def test_a_row_acked_elsewhere_warns_of_a_second_consumer_once(
    table: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async with pb.open_bus(table, durable=False) as bus:
        await bus.register("b", senders=["a"], take_over=True)
        taken = _row(table, "b", 7)
        ours = _row(table, "b", 8)
        # The original polled and silently acked a row for the same panel.
        _sql(table, "UPDATE returns SET status = 'done' WHERE id = ?", taken)
        with caplog.at_level(logging.WARNING, logger="peerbus"):
            assert await _take(bus) == (ours,)
            _sql(table, "UPDATE returns SET status = 'done' WHERE id = ?", _row(table, "b", 9))
            _row(table, "b", 10)
            await _take(bus)
        warnings = [r for r in caplog.records if "another program consumes" in r.getMessage()]
        assert len(warnings) == 1
        assert "cannot prevent duplicates" in warnings[0].getMessage()


async def test_the_originals_watermark_moving_warns_of_a_second_consumer(
    table: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    mark = tmp_path / "peer_poll_watermark"
    mark.write_text("6")
    async with pb.open_bus(table, durable=False) as bus:
        await bus.register("b", senders=["a"], start_after=6, original_watermark=mark)
        with caplog.at_level(logging.WARNING, logger="peerbus"):
            await _take(bus)
            assert "another program consumes" not in caplog.text
            mark.write_text("7")  # the original polled again
            await _take(bus)
            await _take(bus)
        assert caplog.text.count("the original's watermark file") == 1


def test_an_unreadable_original_watermark_names_the_file(tmp_path: Path) -> None:
    mark = tmp_path / "peer_poll_watermark"
    assert pb.read_original_watermark(mark) is None
    mark.write_text("12\n")
    assert pb.read_original_watermark(mark) == 12
    mark.write_text("twelve")
    with pytest.raises(pb.BusOpenError, match=r"peer_poll_watermark.*not a message id"):
        pb.read_original_watermark(mark)
