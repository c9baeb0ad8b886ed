"""Waking on the PostgreSQL bus: NOTIFY wakes the waiter of the recipient it concerns and
no other; the periodic floor catches a row whose writer sent no NOTIFY."""

from __future__ import annotations

from collections.abc import Callable

import anyio
import pytest

from peerbus import BusOptions, open_bus
from tests.pgcluster import PgCluster, dbname_of, raw_insert

pytestmark = pytest.mark.anyio


async def test_a_waiter_wakes_for_its_recipient_and_not_for_another(
    pg_url: str, options: Callable[..., BusOptions]
) -> None:
    # A long floor, so only a NOTIFY can wake the waiter within the test.
    quiet = options(backstop_interval=60.0)
    async with open_bus(pg_url, options=quiet) as waiter, open_bus(pg_url, options=quiet) as writer:
        claim = await waiter.claim("b")
        await writer.submit("a", "c", {"n": "for someone else"})
        # The "must not wake" window: generous, so a slow machine cannot pass it by luck.
        assert not await waiter.wait_for_change(1.0, recipient="b", since=claim.generation)
        with anyio.fail_after(30):
            async with anyio.create_task_group() as tg:
                tg.start_soon(writer.submit, "a", "b", {"n": "for b"})
                assert await waiter.wait_for_change(30, recipient="b", since=claim.generation)
        assert len((await waiter.claim("b")).ids) == 1


async def test_a_broadcast_wakes_every_recipient(
    pg_url: str, options: Callable[..., BusOptions]
) -> None:
    quiet = options(backstop_interval=60.0)
    async with open_bus(pg_url, options=quiet) as waiter, open_bus(pg_url, options=quiet) as writer:
        marks = {who: (await waiter.claim(who)).generation for who in ("b", "c")}
        await writer.submit("a", None, {"n": "to all"})
        with anyio.fail_after(30):
            for who, since in marks.items():
                assert await waiter.wait_for_change(30, recipient=who, since=since)


async def test_the_floor_catches_a_row_that_sent_no_notify(
    pg_url: str, options: Callable[..., BusOptions]
) -> None:
    async with open_bus(pg_url, options=options(backstop_interval=0.2)) as bus:
        claim = await bus.claim("b")
        ident = raw_insert(pg_url, "b", '{"n": 1}')  # a foreign writer: no NOTIFY
        with anyio.fail_after(30):
            assert await bus.wait_for_change(30, recipient="b", since=claim.generation)
        assert (await bus.claim("b")).ids == (ident,)


async def test_a_lost_listener_reconnects_and_wakes_its_waiters(
    pg_cluster: PgCluster, pg_url: str, options: Callable[..., BusOptions]
) -> None:
    # Notifications sent while the listener is away are lost, so its reconnect wakes
    # every waiter once: they claim again and find what came meanwhile.
    async with open_bus(pg_url, options=options(backstop_interval=60.0)) as bus:
        claim = await bus.claim("b")
        with anyio.fail_after(30):
            async with anyio.create_task_group() as tg:

                async def kill() -> None:
                    await anyio.sleep(0.2)  # let the waiter park on the listener first
                    await anyio.to_thread.run_sync(
                        pg_cluster.terminate_connections, dbname_of(pg_url)
                    )

                tg.start_soon(kill)
                assert await bus.wait_for_change(30, recipient="b", since=claim.generation)
        await bus.submit("a", "b", {"n": 1})  # and the bus works on
        assert len((await bus.claim("b")).ids) == 1
