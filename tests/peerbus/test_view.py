"""A viewer's look at a bus (`open_view`, peerbus/view.py), on every backend: the newest
messages one line per recipient, the dead letters, a poll that reads only after a change, and
a file that is never created or written.

An owned SQLite file shows each recipient's receipt; a foreign one its contract column only
(its receipts are in a sidecar the view does not open); PostgreSQL is read through the
contract (history and dead letters).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import anyio
import pytest

from peerbus import Flow, open_view
from peerbus.sqlite.view import receipt_status
from tests.peerbus.conftest import Backend

pytestmark = pytest.mark.anyio


def lines(flows: tuple[Flow, ...]) -> list[tuple[object, ...]]:
    return [(f.sender, f.recipient, f.kind, f.topic, f.status, f.attempts, f.reason) for f in flows]


async def test_a_viewer_sees_the_flow_and_the_dead_letters(
    backend: Backend, bus_location: str, backend_flavour: str
) -> None:
    async with backend() as bus:
        await bus.submit("a", "b", {"type": "note", "n": 1})
        await bus.submit("a", "c", {"n": 2}, topic="t")
        await bus.ack(await bus.claim("b"))
        await bus.fail(await bus.claim("c"), reason="no use")
        async with open_view(bus_location) as view:
            snapshot = await view.poll()
            assert snapshot is not None
            assert await view.poll() is None  # nothing changed since
            dead = ("a", "c", "t", "t", "dead", 1, "no use")
            if backend_flavour == "owned":
                assert lines(snapshot.flow) == [dead, ("a", "b", "note", "", "acked", 1, "")]
            else:
                first, second = lines(snapshot.flow)
                assert second == ("a", "b", "note", "", "acked", 0, "")
                assert first == ("a", "c", "t", "t", "queued", 0, ""), first
            if backend_flavour == "compat":
                assert snapshot.dead == ()  # its receipts are in the sidecar
            else:
                assert lines(snapshot.dead) == [dead]
            await bus.submit("b", None, {"type": "news"})
            # PostgreSQL's change counter follows its NOTIFY; a poll reads anyway after 2 s.
            with anyio.fail_after(10):
                for _ in range(200):
                    if (changed := await view.poll()) is not None:
                        break
                    await anyio.sleep(0.05)
            assert changed is not None
            assert lines(changed.flow)[0][:5] == ("b", "*", "news", "", "queued")


async def test_a_missing_bus_file_is_refused_and_not_made(tmp_path: Path) -> None:
    where = tmp_path / "bus.sqlite"
    with pytest.raises(sqlite3.OperationalError):
        async with open_view(str(where)):
            pass
    assert not where.exists()


def test_a_lease_that_ran_out_is_back_in_the_queue() -> None:
    assert receipt_status("leased", 110.0, now=100.0) == "claimed"
    assert receipt_status("leased", 90.0, now=100.0) == "queued"
    assert [receipt_status(s, None, 0) for s in ("waiting", "done", "failed")] == [
        "queued",
        "acked",
        "dead",
    ]
