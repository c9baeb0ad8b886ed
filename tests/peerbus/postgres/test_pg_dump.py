"""Export and import for `bus migrate`: a PostgreSQL bus copied into an empty one keeps its
ids, receipts, recipients, keys and identity; a bus with messages is not imported into."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from peerbus import BusOpenError, BusOptions, Outgoing
from peerbus.postgres import open_pg_bus
from tests.peerbus.conftest import FakeClock
from tests.pgcluster import PgCluster

pytestmark = pytest.mark.anyio


async def test_export_then_import_round_trips_the_whole_bus(
    pg_cluster: PgCluster, pg_url: str, options: Callable[..., BusOptions], clock: FakeClock
) -> None:
    async with open_pg_bus(pg_url, options()) as source:
        await source.register("b", senders=["a"])
        await source.register("c")
        ids = await source.submit_many(
            "a",
            [
                Outgoing("b", {"n": 1}, key="k1"),
                Outgoing(None, {"t": "all hands"}),
                Outgoing("b", {"type": "ack"}),
                Outgoing("c", {"n": 2}),
            ],
        )
        claim = await source.claim("b")
        await source.ack(claim, only=[ids[0]])
        await source.fail(claim, reason="no", only=[ids[1]])
        leased = await source.claim("c", lease=600)
        dump = await source.export_dump()
        source_id = source.identity
    assert dump.bus_id == source_id and [r.id for r in dump.rows] == ids
    assert {(d.message_id, d.recipient, d.state) for d in dump.receipts} == {
        (ids[0], "b", "done"), (ids[1], "b", "failed"), (ids[2], "b", "done"),
        (ids[1], "c", "leased"), (ids[3], "c", "leased"),
    }  # fmt: skip

    target_url = pg_cluster.create_database()
    async with open_pg_bus(target_url, options()) as target:
        await target.import_dump(dump)
        assert target.identity == source_id
        assert await target.export_dump() == dump
        # The copy goes on where the source stopped: the lease, the key, the id sequence.
        assert (await target.ack(leased)).settled == leased.ids
        assert await target.submit("a", "b", {"n": 1}, key="k1") == ids[0]
        assert await target.submit("a", "b", {"n": 5}) > max(ids)
        with pytest.raises(BusOpenError, match="not empty"):
            await target.import_dump(dump)
    async with open_pg_bus(target_url, options()) as reopened:
        assert reopened.identity == source_id
