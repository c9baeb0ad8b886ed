"""What a retry after a cut-off COMMIT does: the same transaction run twice applies once.

pool.py runs a transaction again when the connection drops, and a drop during COMMIT
leaves its outcome unknown. These tests run the submit and claim transactions twice, as
that retry would after a commit that went through, and check that nothing is doubled.
Also the PostgreSQL versions of two SQLite-only tests: a claim's dead letters over several
steps, and prune forgetting the keys of the rows it deletes.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable

import psycopg
import pytest

from peerbus import BusOptions, Outgoing
from peerbus.postgres import claim as claim_mod
from peerbus.postgres import open_pg_bus, submit
from peerbus.postgres.pool import Pool
from peerbus.postgres.schema import id_sequence
from peerbus.routing import Budget, Route
from tests.peerbus.conftest import FakeClock
from tests.pgcluster import raw_insert

pytestmark = pytest.mark.anyio


async def test_a_submit_run_twice_writes_once(
    pg_url: str, options: Callable[..., BusOptions]
) -> None:
    async with open_pg_bus(pg_url, options()) as bus:
        pool = Pool(pg_url, options())
        sequence = await pool.run(id_sequence)
        batch = submit.prepare(
            "a", [Outgoing("b", {"n": 1}), Outgoing("b", {"n": 2}, key="k")], options()
        )
        ids = await pool.run(lambda conn: submit.allocate(conn, sequence, batch))
        first = await pool.run(lambda conn: submit.write(conn, "a", batch, ids, sequence, 0.0))
        again = await pool.run(lambda conn: submit.write(conn, "a", batch, ids, sequence, 0.0))
        pool.close()
        assert first == again == ids
        assert [r.id for r in await bus.history()] == first


async def test_a_connection_whose_transaction_failed_is_never_used_again(
    pg_url: str, options: Callable[..., BusOptions]
) -> None:
    """The server can cut a connection in a way psycopg does not mark as broken (CI saw a
    retry fail on one for 61 s: "another command is already in progress"); the retry must
    take a fresh connection whatever state the failed one was left in."""
    pool = Pool(pg_url, options())
    backends: list[int] = []

    def work(conn: psycopg.Connection[tuple[object, ...]]) -> int:
        row = conn.execute("SELECT pg_backend_pid()").fetchone()
        assert row is not None
        backends.append(int(str(row[0])))
        if len(backends) == 1:
            raise psycopg.OperationalError("cut off")  # transient: run again
        return backends[-1]

    try:
        assert await pool.run(work) == backends[1]
        assert backends[0] != backends[1]
        assert await pool.run(work) == backends[2] == backends[1]  # a good one is kept
    finally:
        pool.close()


async def test_a_claim_run_twice_with_its_token_takes_the_same_rows_once(
    pg_url: str, options: Callable[..., BusOptions]
) -> None:
    async with open_pg_bus(pg_url, options()) as bus:
        ids = await bus.submit_many("a", [Outgoing("b", {"n": n}) for n in range(3)])
        pool = Pool(pg_url, options())
        token = uuid.uuid4().hex

        def step(conn: psycopg.Connection[tuple[object, ...]]) -> claim_mod.Step:
            return claim_mod.claim_step(
                conn, route=Route.of("b", None), budget=Budget(2, 10_000), token=token,
                lease=60.0, now=options().clock(), options=options(),
            )  # fmt: skip

        first = await pool.run(step)
        again = await pool.run(step)  # the retry of a claim whose commit went through
        pool.close()
        assert [m.id for m in first.plan.deliver] == [m.id for m in again.plan.deliver] == ids[:2]
        inbox = await bus.inbox("b")
        assert [(p.id, p.state, p.deliveries) for p in inbox] == [
            (ids[0], "leased", 1), (ids[1], "leased", 1), (ids[2], "new", 0),
        ]  # fmt: skip
        assert (await bus.claim("b")).ids == (ids[2],)  # another claim: only what is left


async def test_a_claim_reports_the_dead_letters_of_all_its_steps(
    pg_url: str, options: Callable[..., BusOptions], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(claim_mod, "SCAN_CAP", 2)  # two rows per transaction: three steps
    async with open_pg_bus(pg_url, options()) as bus:
        bad = [raw_insert(pg_url, "b", t) for t in ["{broken", "[1]", '"s"', "{oops", "true"]]
        good = await bus.submit("a", "b", {"n": 1})
        claim = await bus.claim("b")
        assert claim.ids == (good,)
        assert [i for i, _ in claim.dead_letters] == bad and claim.failed == 5
        stored = {d.id: d.reason for d in await bus.dead_letters()}
        assert dict(claim.dead_letters) == stored


async def test_prune_forgets_the_keys_of_the_rows_it_deletes(
    pg_url: str, options: Callable[..., BusOptions], clock: FakeClock
) -> None:
    async with open_pg_bus(pg_url, options()) as bus:
        old = await bus.submit("a", "b", {"n": 1}, key="old")
        await bus.ack(await bus.claim("b"))
        kept = await bus.submit("a", "b", {"n": 2}, key="kept")  # pending: never pruned
        clock.advance(3600)
        assert await bus.prune(older_than=60) == 1
        dump = await bus.export_dump()
        assert {(s.key, s.message_id) for s in dump.sent} == {("kept", kept)}
        assert await bus.submit("a", "b", {"n": 2}, key="kept") == kept
        assert await bus.submit("a", "b", {"n": 1}, key="old") not in (old, kept)
