"""The bus contract, run on every backend (SQLite: an owned file and hand-made foreign tables;
PostgreSQL) and on both async libraries (asyncio, trio). A backend joins the suite by adding
a `backend_flavour` param (conftest.py).

Delivery: at least once, in id order, never acked before processing; broadcasts per
recipient; nacks, lease expiry and restarts redeliver; stale claims cannot settle. How
messages are given up (attempts, `fail`) is in test_dead_letters.py, keyed submits in
test_keys.py.
"""

from __future__ import annotations

import json
from collections.abc import Callable

import anyio
import pytest

from peerbus import PayloadEncodingError, PayloadNotObjectError, PayloadTooLargeError
from tests.peerbus.conftest import Backend

pytestmark = pytest.mark.anyio


async def test_roundtrip_in_id_order_with_host_set_sender(backend: Backend) -> None:
    async with backend() as bus:
        ids = [await bus.submit("a", "b", {"n": i, "from": "watchdog"}) for i in range(3)]
        claim = await bus.claim("b")
        assert claim.ids == tuple(ids) == tuple(sorted(ids))
        assert [m.sender for m in claim.messages] == ["a", "a", "a"]
        assert claim.messages[0].payload == {"n": 0, "from": "watchdog"}
        assert (await bus.ack(claim)).settled == tuple(ids)
        assert (await bus.claim("b")).messages == ()


async def test_refused_payloads_write_nothing(backend: Backend) -> None:
    async with backend(max_payload_bytes=1024) as bus:
        with pytest.raises(PayloadNotObjectError):
            await bus.submit("a", "b", [1, 2])  # type: ignore[arg-type]
        with pytest.raises(PayloadTooLargeError) as too_large:
            await bus.submit("a", "b", {"text": "x" * 2000})
        assert too_large.value.limit == 1024
        with pytest.raises(PayloadEncodingError):
            await bus.submit("a", "b", {"bad": {1, 2}})
        assert await bus.history() == []


async def test_text_every_backend_stores_alike(backend: Backend) -> None:
    """NULs (PostgreSQL stores none) in a payload, a topic or a sender's text; a long topic."""
    async with backend() as bus:
        ident = await bus.submit("a", "b", {"text": "nul\x00here"}, topic="t\x00" + "x" * 300)
        (row,) = await bus.history()
        assert row.id == ident and json.loads(row.payload_json) == {"text": "nul\x00here"}
        assert row.topic == "t\ufffd" + "x" * 198
        (message,) = (await bus.claim("b")).messages
        assert message.payload == {"text": "nul\x00here"} and message.topic == row.topic


async def test_recipient_filtering(backend: Backend) -> None:
    async with backend() as bus:
        mine = await bus.submit("x", "b", {"t": "direct from anyone"})
        await bus.submit("a", "c", {"t": "direct to someone else"})
        from_a = await bus.submit("a", None, {"t": "broadcast from a sender b takes"})
        await bus.submit("z", None, {"t": "broadcast from a sender b ignores"})
        await bus.submit("b", None, {"t": "b's own broadcast"})
        claim = await bus.claim("b", senders=["a"])
        assert claim.ids == (mine, from_a)
        assert claim.messages[1].recipient is None


async def test_broadcast_acked_by_one_is_still_delivered_to_others(backend: Backend) -> None:
    async with backend() as bus:
        for who in ("b", "c", "d"):
            await bus.register(who, senders=["a"])
        ident = await bus.submit("a", None, {"t": "all hands"})
        first = await bus.claim("b", senders=["a"])
        await bus.ack(first)
        for who in ("c", "d"):
            claim = await bus.claim(who, senders=["a"])
            assert claim.ids == (ident,)
            await bus.ack(claim)
        assert (await bus.claim("b", senders=["a"])).ids == ()
        if bus.mode == "owned":
            # Closed for everyone only once every registered recipient acked it.
            assert [r.status for r in await bus.history()] == ["done"]


async def test_nacked_message_below_the_cursor_is_redelivered(backend: Backend) -> None:
    async with backend() as bus:
        one = await bus.submit("a", "b", {"n": 1})
        two = await bus.submit("a", "b", {"n": 2})
        first = await bus.claim("b", max_messages=1)
        second = await bus.claim("b", max_messages=1)
        assert (first.ids, second.ids) == ((one,), (two,))
        await bus.ack(second)
        await bus.nack(first)  # its turn failed: one attempt counted
        again = await bus.claim("b")
        assert again.ids == (one,)
        assert again.messages[0].attempt == 2


async def test_nack_delay_holds_the_message_back(
    backend: Backend, clock: Callable[[], float]
) -> None:
    async with backend() as bus:
        await bus.submit("a", "b", {"n": 1})
        await bus.nack(await bus.claim("b"), delay=30)
        assert (await bus.claim("b")).ids == ()
        clock.advance(31)  # type: ignore[attr-defined]
        assert len((await bus.claim("b")).ids) == 1


async def test_lease_expiry_redelivers_to_a_restarted_consumer(
    backend: Backend, clock: Callable[[], float]
) -> None:
    async with backend() as old:
        ident = await old.submit("a", "b", {"n": 1})
        stale = await old.claim("b", lease=10)
        async with backend() as restarted:
            assert (await restarted.claim("b", lease=10)).ids == ()
            clock.advance(11)  # type: ignore[attr-defined]
            fresh = await restarted.claim("b", lease=10)
            assert fresh.ids == (ident,)
            lost = await old.ack(stale)
            assert (lost.settled, lost.lost) == ((), (ident,))
            assert (await old.extend(stale)).lost == (ident,)
            assert (await restarted.ack(fresh)).settled == (ident,)


async def test_register_releases_the_previous_incarnations_leases(backend: Backend) -> None:
    async with backend() as bus:
        ident = await bus.submit("a", "b", {"n": 1})
        stale = await bus.claim("b", lease=600)
        epoch = await bus.register("b")
        fresh = await bus.claim("b")
        assert fresh.ids == (ident,) and fresh.epoch == epoch == stale.epoch + 1
        assert (await bus.ack(stale)).lost == (ident,)
        assert (await bus.ack(fresh)).settled == (ident,)


async def test_register_without_release_leaves_the_leases_to_their_holder(
    backend: Backend,
) -> None:
    # A host making an external agent known, while the agent's server holds a claim.
    async with backend() as bus:
        ident = await bus.submit("a", "b", {"n": 1})
        await bus.register("b", epoch=1)
        held = await bus.claim("b", lease=600)
        assert await bus.register("b", epoch=1, release=False) == held.epoch
        assert (await bus.claim("b")).ids == ()
        assert (await bus.ack(held)).settled == (ident,)


async def test_expired_lease_nobody_reclaimed_can_still_be_acked(
    backend: Backend, clock: Callable[[], float]
) -> None:
    async with backend() as bus:
        ident = await bus.submit("a", "b", {"n": 1})
        claim = await bus.claim("b", lease=5)
        clock.advance(60)  # type: ignore[attr-defined]
        assert (await bus.ack(claim)).settled == (ident,)
        assert (await bus.ack(claim)).settled == (ident,)  # acking twice is harmless


async def test_extend_keeps_the_lease(backend: Backend, clock: Callable[[], float]) -> None:
    async with backend() as bus:
        await bus.submit("a", "b", {"n": 1})
        claim = await bus.claim("b", lease=10)
        clock.advance(8)  # type: ignore[attr-defined]
        assert (await bus.extend(claim, lease=10)).lost == ()
        clock.advance(8)  # type: ignore[attr-defined]
        assert (await bus.claim("b")).ids == ()


async def test_poison_message_is_dead_lettered_while_others_flow(
    backend: Backend, clock: Callable[[], float]
) -> None:
    async with backend(max_attempts=3, isolate_after=2) as bus:
        ids = [await bus.submit("a", "b", {"n": n}) for n in range(3)]
        poison = ids[1]
        processed: list[int] = []
        for _ in range(10):
            claim = await bus.claim("b")
            if not claim.messages:
                break
            if poison in claim.ids:
                # The turn fails on it, on its own: every id of the batch counts an attempt,
                # until after isolate_after failures each one is delivered alone.
                await bus.nack(claim)
                continue
            processed += claim.ids
            await bus.ack(claim)
        assert sorted(processed) == [ids[0], ids[2]]
        dead = await bus.dead_letters()
        assert [(d.id, d.recipient) for d in dead] == [(poison, "b")]
        assert "its turn failed 3 times" in dead[0].reason
        # Two turns with the whole batch, one alone; the claim that gave it up delivered nothing.
        assert (dead[0].attempts, dead[0].deliveries) == (3, 3)


async def test_silent_auto_ack_acks_only_the_noise(backend: Backend) -> None:
    async with backend() as bus:
        await bus.submit("a", "b", {"type": "ack"})
        keep = await bus.submit("a", "b", {"type": "review", "text": "look"})
        await bus.submit("a", "b", {"type": "pong_ack"})
        unknown = await bus.submit("a", "b", {"type": "something_new"})
        untyped = await bus.submit("a", "b", {"text": "no type"})
        claim = await bus.claim("b")
        assert claim.ids == (keep, unknown, untyped)
        assert claim.noise_acked == 2
        stats = await bus.stats()
        assert stats.recipients[0].noise_acked == 2


async def test_silent_types_are_configurable(backend: Backend) -> None:
    async with backend(silent_types={"heartbeat"}) as bus:
        await bus.submit("a", "b", {"type": "heartbeat"})
        ack = await bus.submit("a", "b", {"type": "ack"})
        claim = await bus.claim("b")
        assert (claim.ids, claim.noise_acked) == ((ack,), 1)


async def test_bad_rows_go_to_dead_letters_and_the_rest_flow(
    backend: Backend, insert_foreign: Callable[..., int]
) -> None:
    async with backend() as bus:
        good = [await bus.submit("a", "b", {"n": 0})]
        bad = {
            insert_foreign("b", "{not json"): "not valid JSON",
            insert_foreign("b", "[" * 100_000 + "]" * 100_000): "nests too deep",
            insert_foreign("b", '{"a":' * 100 + "1" + "}" * 100): "deeper than 64",
            insert_foreign("b", '"a string"'): "JSON string, not an object",
            insert_foreign("b", json.dumps({"blob": "x" * 10_000_000})): "over the",
        }
        good.append(await bus.submit("a", "b", {"n": 1}))
        claim = await bus.claim("b")
        assert claim.ids == tuple(good)
        dead = {d.id: d.reason for d in await bus.dead_letters(recipient="b")}
        assert dead.keys() == bad.keys()
        for ident, words in bad.items():
            assert words in dead[ident]


async def test_batches_respect_the_token_budget(backend: Backend) -> None:
    async with backend() as bus:
        big = await bus.submit("a", "b", {"text": "y" * 8000})
        small = [await bus.submit("a", "b", {"text": "x" * 400}) for _ in range(10)]
        first = await bus.claim("b", max_tokens=500)
        assert first.ids == (big,)  # over budget on its own: delivered alone, never stuck
        second = await bus.claim("b", max_tokens=500)
        assert 0 < len(second.ids) < 10 and second.ids == tuple(small[: len(second.ids)])


async def test_a_burst_of_ten_thousand_drains_in_bounded_batches(backend: Backend) -> None:
    from peerbus import Outgoing

    async with backend() as bus:
        burst = [Outgoing("b", {"type": "ack" if i % 2 else "work", "i": i}) for i in range(10_000)]
        await bus.submit_many("a", burst)
        seen: list[int] = []
        noise = 0
        while True:
            claim = await bus.claim("b", max_messages=1000, max_tokens=1_000_000)
            noise += claim.noise_acked
            if not claim.messages:
                break
            assert len(claim.messages) <= 1000
            seen += claim.ids
            await bus.ack(claim)
        assert len(seen) == 5000 and seen == sorted(seen) and noise == 5000


async def test_stale_epoch_is_flagged_not_hidden(backend: Backend, backend_flavour: str) -> None:
    if backend_flavour == "compat":
        pytest.skip("a foreign table has no recipient_epoch column to address an epoch")
    async with backend() as bus:
        await bus.register("b")
        old = await bus.submit("a", "b", {"n": "for epoch 1"})
        await bus.register("b")
        new = await bus.submit("a", "b", {"n": "for epoch 2"})
        claim = await bus.claim("b")
        flags = {m.id: (m.stale_epoch, m.recipient_epoch) for m in claim.messages}
        assert flags == {old: (True, 1), new: (False, 2)} and claim.epoch == 2


async def test_ack_only_some_ids(backend: Backend) -> None:
    async with backend() as bus:
        ids = [await bus.submit("a", "b", {"n": n}) for n in range(3)]
        claim = await bus.claim("b")
        assert (await bus.ack(claim, only=[ids[0]])).settled == (ids[0],)
        assert (await bus.nack(claim, only=ids[1:])).settled == tuple(ids[1:])
        assert (await bus.claim("b")).ids == tuple(ids[1:])


async def test_waiter_wakes_on_a_submit_in_the_same_process(backend: Backend) -> None:
    async with backend() as bus:
        await bus.claim("b")
        async with anyio.create_task_group() as tg:
            tg.start_soon(bus.submit, "a", "b", {"n": 1})
            assert await bus.wait_for_change(10, recipient="b")
        assert len((await bus.claim("b")).ids) == 1


async def test_waiter_wakes_on_a_commit_from_another_connection(backend: Backend) -> None:
    async with (
        backend() as waiter,
        backend() as writer,
    ):
        claim = await waiter.claim("b")
        async with anyio.create_task_group() as tg:
            tg.start_soon(writer.submit, "a", "b", {"n": 1})
            assert await waiter.wait_for_change(10, since=claim.generation)
        assert len((await waiter.claim("b")).ids) == 1


async def test_waiter_times_out_when_nothing_changes(backend: Backend) -> None:
    async with backend() as bus:
        await bus.claim("b")
        assert not await bus.wait_for_change(0.05)


async def test_prune_and_retry(
    backend: Backend, clock: Callable[[], float], insert_foreign: Callable[..., int]
) -> None:
    async with backend() as bus:
        done = await bus.submit("a", "b", {"n": 1})
        broken = insert_foreign("b", "{broken")
        await bus.ack(await bus.claim("b"))
        await bus.submit("a", "b", {"n": 2})  # pending: never pruned
        clock.advance(3600)  # type: ignore[attr-defined]
        if bus.mode == "owned":
            assert await bus.prune(older_than=60) == 1
            assert done not in [r.id for r in await bus.history()]
        assert await bus.retry(recipient="b") == 1
        assert await bus.dead_letters() == []
        claim = await bus.claim("b")
        assert broken not in claim.ids  # still broken: straight back to the dead letters
        assert [d.id for d in await bus.dead_letters()] == [broken]


async def test_inbox_and_stats_do_not_claim(backend: Backend) -> None:
    async with backend() as bus:
        ids = [await bus.submit("a", "b", {"n": n}) for n in range(2)]
        await bus.claim("b", max_messages=1)
        inbox = await bus.inbox("b")
        assert [(p.id, p.state) for p in inbox] == [(ids[0], "leased"), (ids[1], "new")]
        stats = await bus.stats()
        assert (stats.recipients[0].leased, stats.recipients[0].waiting) == (1, 1)
        assert stats.mode == bus.mode
