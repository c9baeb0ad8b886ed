"""Connection loss on the PostgreSQL bus: killed backends and a server restart mid-stream
lose nothing and double nothing; every operation reconnects and goes on."""

from __future__ import annotations

from collections.abc import Callable

import anyio
import pytest

from peerbus import BusOptions, open_bus
from tests.pgcluster import PgCluster, dbname_of

pytestmark = pytest.mark.anyio

COUNT = 300


async def _stream(url: str, options: BusOptions, disrupt: Callable[[], object]) -> list[int]:
    """A producer sends COUNT messages to b while a consumer claims and acks them; halfway
    through, `disrupt()` runs (in a thread). Returns the ids in the order consumed."""
    sent: list[int] = []
    consumed: list[int] = []
    halfway = anyio.Event()

    async with (
        open_bus(url, options=options) as producer,
        open_bus(url, options=options) as consumer,
    ):

        async def produce() -> None:
            for n in range(COUNT):
                sent.append(await producer.submit("a", "b", {"n": n}))
                if n == COUNT // 2:
                    halfway.set()

        async def consume() -> None:
            while len(consumed) < COUNT:
                claim = await consumer.claim("b", max_messages=7)
                if not claim.messages:
                    await consumer.wait_for_change(1.0, recipient="b", since=claim.generation)
                    continue
                consumed.extend(claim.ids)
                assert (await consumer.ack(claim)).lost == ()

        async def disturb() -> None:
            await halfway.wait()
            await anyio.to_thread.run_sync(disrupt)

        with anyio.fail_after(120):
            async with anyio.create_task_group() as tg:
                tg.start_soon(produce)
                tg.start_soon(consume)
                tg.start_soon(disturb)
        assert await consumer.claim("b") is not None
        assert (await consumer.claim("b")).ids == ()
        stats = await consumer.stats()
    assert sorted(sent) == sorted(consumed) and len(set(consumed)) == COUNT
    assert stats.rows_by_status == {"done": COUNT}
    return consumed


async def test_killed_connections_lose_and_double_nothing(
    pg_cluster: PgCluster, pg_url: str, options: Callable[..., BusOptions]
) -> None:
    killed: list[int] = []

    def kill() -> None:
        for _ in range(3):
            killed.append(pg_cluster.terminate_connections(dbname_of(pg_url)))

    consumed = await _stream(pg_url, options(), kill)
    assert sum(killed) > 0  # the producer's, the consumer's and the listeners' connections
    assert consumed == sorted(consumed)  # one recipient, one consumer: id order holds


async def test_a_server_restart_loses_and_doubles_nothing(
    pg_cluster: PgCluster, pg_url: str, options: Callable[..., BusOptions]
) -> None:
    await _stream(pg_url, options(), pg_cluster.restart)


async def test_a_server_away_past_the_deadline_raises_busy(
    pg_cluster: PgCluster, pg_url: str, options: Callable[..., BusOptions]
) -> None:
    from peerbus import BusBusyError

    async with open_bus(pg_url, options=options(busy_timeout=0.2, lock_deadline=0.5)) as bus:
        await bus.submit("a", "b", {"n": 1})
        await anyio.to_thread.run_sync(pg_cluster.stop)
        try:
            with anyio.fail_after(60), pytest.raises(BusBusyError) as err:
                await bus.submit("a", "b", {"n": 2})
        finally:
            await anyio.to_thread.run_sync(pg_cluster.start)
        assert "PostgreSQL server stayed unavailable" in str(err.value)
        assert "pg-test-secret" not in str(err.value)
        assert len(await bus.history()) == 1  # back again: the bus works on
