"""Claims on the PostgreSQL bus: two claimers of one recipient never hold one message,
claims of different recipients never wait on each other, and the claim query reads the
pending index, not the done rows."""

from __future__ import annotations

from collections.abc import Callable

import anyio
import anyio.lowlevel
import psycopg
import pytest

from peerbus import BusBackend, BusOptions, Outgoing, open_bus
from peerbus.postgres.claim import PAGE_SQL

COUNT = 200


@pytest.mark.anyio
async def test_two_claimers_of_one_recipient_never_hold_the_same_message(
    pg_url: str, options: Callable[..., BusOptions]
) -> None:
    held: dict[str, list[int]] = {}
    async with (
        open_bus(pg_url, options=options()) as one,
        open_bus(pg_url, options=options()) as two,
    ):
        ids = await one.submit_many("a", [Outgoing("b", {"n": n}) for n in range(COUNT)])

        async def consume(name: str, b: BusBackend) -> None:
            mine = held.setdefault(name, [])
            while sum(map(len, held.values())) < COUNT:
                claim = await b.claim("b", max_messages=2)
                mine.extend(claim.ids)
                await anyio.lowlevel.checkpoint()  # let the other claimer in between
                if claim.messages:
                    assert (await b.ack(claim)).lost == ()

        with anyio.fail_after(120):
            async with anyio.create_task_group() as tg:
                for n in range(3):  # three claimers on each bus, each on its own connection
                    tg.start_soon(consume, f"one-{n}", one)
                    tg.start_soon(consume, f"two-{n}", two)
    everything = [i for got in held.values() for i in got]
    assert sorted(everything) == ids  # each message held by exactly one claim


@pytest.mark.anyio
async def test_claims_of_different_recipients_do_not_wait_on_each_other(
    pg_url: str, options: Callable[..., BusOptions], monkeypatch: pytest.MonkeyPatch
) -> None:
    # A statement that waits on a lock gives up after 2 s (and is retried), so a claim that
    # would wait fails the test at the fail_after below instead of hanging it.
    monkeypatch.setenv("PGOPTIONS", "-c lock_timeout=2000")
    async with open_bus(pg_url, options=options()) as bus:
        ident = await bus.submit("a", None, {"t": "all hands"})
        # b was delivered the broadcast once and gave it back: it is b's to claim again.
        assert (await bus.nack(await bus.claim("b"), count=False)).settled == (ident,)
        with psycopg.connect(pg_url) as other:
            # Another host's claim of b, in flight: it holds b's row (and the message's).
            other.execute("SELECT 1 FROM peerbus_recipients WHERE recipient = 'b' FOR UPDATE")
            other.execute("SELECT 1 FROM returns WHERE id = %s FOR UPDATE", (ident,))
            with anyio.fail_after(20):
                assert (await bus.claim("c")).ids == (ident,)  # never waits for b's claim
                # b's own claim: empty after a short look-again, never stuck on the lock.
                assert (await bus.claim("b")).ids == ()
            other.rollback()
        assert (await bus.claim("b")).ids == (ident,)


def test_the_claim_query_reads_the_pending_index_not_the_done_rows(pg_url: str) -> None:
    async def setup() -> None:
        async with open_bus(pg_url, options=BusOptions()) as bus:
            await bus.submit("a", "b", {"n": 0})

    anyio.run(setup)
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(
            """INSERT INTO returns (agent_role, recipient_role, payload_json, status, submitted_at)
               SELECT 'a', CASE WHEN g % 2 = 0 THEN 'b' END, '{}', 'done', 'x'
                 FROM generate_series(1, 50000) AS g"""
        )
        conn.execute(
            "INSERT INTO returns (agent_role, recipient_role, payload_json) VALUES ('a', 'b', '{}')"
        )
        conn.execute("ANALYZE")
        sql = PAGE_SQL  # the claim's own query
        params = {
            "me": "b",
            "all_senders": True,
            "senders": [],
            "now": 0.0,
            "token": "t",
            "cap": 1000,
            "after": 0,
            "limit": 51,
        }
        plan = "\n".join(
            str(r[0]) for r in conn.execute("EXPLAIN (ANALYZE, COSTS OFF) " + sql, params)
        )
    # Both arms read the partial index of pending rows; the 50,000 done rows are not in it.
    assert plan.count("Index Scan using returns_pending on returns") == 2, plan
    assert "Seq Scan on returns" not in plan, plan
