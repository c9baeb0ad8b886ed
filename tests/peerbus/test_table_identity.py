"""A foreign table's identity cannot be fooled, and a lost file stops the bus once.

Issue 30: identity judged by inode (reused), birth time (absent on Linux) and "the highest
id went down" missed a table made again that reached the old highest id, and a file
replaced while the host ran was not noticed at all (its first write failed with "attempt
to write a readonly database", again and again). Each test makes the case with real files
and the real bus, and checks the new table's rows come through from the first.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import anyio
import pytest

import peerbus as pb
import peerbus.sqlite as sq
from tests.peerbus.conftest import make_foreign, raw_insert

OPTIONS = pb.BusOptions(durable=False)


def _remake(path: Path, rows: int) -> list[int]:
    """Drop `returns` and make it again in the same file (same inode), with `rows` rows."""
    conn = sqlite3.connect(path)
    conn.execute("DROP TABLE returns")
    conn.commit()
    conn.close()
    make_foreign(path)
    return [raw_insert(path, "b", f'{{"n": {n}}}') for n in range(rows)]


def _drain(bus: sq.BusFile) -> tuple[int, ...]:
    claim = sq.claim_batch(bus, "b", senders=["a"])
    sq.ack(bus, claim)
    return claim.ids


def test_a_table_made_again_past_the_old_highest_id_is_noticed_at_open(tmp_path: Path) -> None:
    path = make_foreign(tmp_path / "returns.db")
    for n in range(3):
        raw_insert(path, "b", f'{{"n": {n}}}')
    bus = sq.connect_bus(path, OPTIONS)
    assert _drain(bus) == (1, 2, 3)
    old = bus.identity
    sq.close_bus(bus)

    fresh = _remake(path, 4)  # ids 1..4: the old highest id (3) is reached and passed
    bus = sq.connect_bus(path, OPTIONS)
    try:
        assert bus.identity != old
        assert _drain(bus) == tuple(fresh)
    finally:
        sq.close_bus(bus)


def test_a_table_made_again_while_the_bus_is_open_is_noticed_at_the_next_claim(
    tmp_path: Path,
) -> None:
    path = make_foreign(tmp_path / "returns.db")
    for n in range(3):
        raw_insert(path, "b", f'{{"n": {n}}}')

    async def main() -> None:
        async with pb.open_bus(str(path), durable=False) as bus:
            await bus.register("b", senders=["a"])
            first = await bus.claim("b", senders=["a"])
            await bus.ack(first)
            assert first.ids == (1, 2, 3)
            old = bus.identity
            fresh = _remake(path, 5)
            again = await bus.claim("b", senders=["a"])
            assert again.ids == tuple(fresh)
            assert bus.identity != old  # the store's remembered ids of the old table are void

    anyio.run(main)


def test_a_file_replaced_while_the_bus_is_open_is_reopened(tmp_path: Path) -> None:
    path = make_foreign(tmp_path / "returns.db")
    for n in range(3):
        raw_insert(path, "b", f'{{"n": {n}}}')

    async def main() -> None:
        async with pb.open_bus(str(path), durable=False) as bus:
            await bus.register("b", senders=["a"])
            await bus.ack(await bus.claim("b", senders=["a"]))
            new = make_foreign(tmp_path / "new.db")
            fresh = [raw_insert(new, "b", f'{{"n": {n}}}') for n in range(4)]
            os.replace(new, path)
            # The first write after the swap: no "attempt to write a readonly database".
            sent = await bus.submit("a", "b", {"n": 99})
            claim = await bus.claim("b", senders=["a"])
            assert claim.ids == (*fresh, sent)

    anyio.run(main)


def test_a_vanished_file_stops_the_bus_once_with_a_message(tmp_path: Path) -> None:
    path = make_foreign(tmp_path / "returns.db")
    raw_insert(path, "b", '{"n": 1}')

    async def main() -> None:
        async with pb.open_bus(str(path), durable=False) as bus:
            await bus.register("b", senders=["a"])
            await bus.ack(await bus.claim("b", senders=["a"]))
            os.remove(path)
            with pytest.raises(pb.BusGoneError, match="is gone") as sending:
                await bus.submit("a", "b", {"n": 2})
            with pytest.raises(pb.BusGoneError, match="is gone") as claiming:
                await bus.claim("b", senders=["a"])
            assert sending.value.path == claiming.value.path == path

    anyio.run(main)


def test_a_bus_remembers_the_identities_its_place_had_before(tmp_path: Path) -> None:
    """A turn store keeps its unpublished sends under the identity of the table that fed the
    turn: after the table is made again, the bus names that identity as its own earlier one,
    so those sends still go out (on the new table)."""
    path = make_foreign(tmp_path / "returns.db")
    raw_insert(path, "b", '{"n": 0}')

    async def main() -> None:
        async with pb.open_bus(str(path), durable=False) as bus:
            await bus.register("b", senders=["a"])
            await bus.ack(await bus.claim("b", senders=["a"]))
            first = bus.identity
            assert await bus.earlier_identities() == ()
            _remake(path, 1)
            await bus.ack(await bus.claim("b", senders=["a"]))
            second = bus.identity
            _remake(path, 1)
            await bus.ack(await bus.claim("b", senders=["a"]))
            assert await bus.earlier_identities() == (first, second)
            assert bus.identity not in (first, second)
        async with pb.open_bus(str(tmp_path / "owned.db"), durable=False) as owned:
            assert await owned.earlier_identities() == ()

    anyio.run(main)
