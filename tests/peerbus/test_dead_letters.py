"""Giving messages up, on every backend and both async libraries: attempts count failed turns
only (a delivery cut off by a crash never counts), a consumer can dead-letter at once with
`fail`, and a claim reports every dead letter it made.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import pytest

import peerbus.sqlite as pb
from peerbus.sqlite import BusFile
from tests.peerbus.conftest import Backend, FakeClock


@pytest.mark.anyio
async def test_a_delivery_cut_off_by_a_crash_never_counts_an_attempt(
    backend: Backend, clock: FakeClock
) -> None:
    async with backend(max_attempts=2, isolate_after=1) as bus:
        ident = await bus.submit("a", "b", {"n": 1})
        for _ in range(3):
            assert (await bus.claim("b", lease=5)).ids == (ident,)
            clock.advance(6)  # the host died mid-turn: its lease runs out
        for _ in range(3):
            assert (await bus.claim("b")).ids == (ident,)
            await bus.register("b")  # the restarted host releases the dead one's lease
        claim = await bus.claim("b")
        assert claim.ids == (ident,) and claim.messages[0].attempt == 1
        assert (claim.failed, claim.dead_letters) == (0, ())
        [pending] = await bus.inbox("b")
        assert (pending.attempts, pending.deliveries) == (0, 7)
        assert await bus.dead_letters() == []


@pytest.mark.anyio
async def test_only_a_nack_for_a_failed_turn_counts_an_attempt(backend: Backend) -> None:
    async with backend(max_attempts=2, isolate_after=2) as bus:
        ident = await bus.submit("a", "b", {"n": 1})
        other = await bus.submit("a", "b", {"n": 2})
        for _ in range(3):
            # Halted, stopping, shutting down: the batch goes back untouched.
            assert (await bus.nack(await bus.claim("b"), count=False)).settled == (ident, other)
        claim = await bus.claim("b")
        assert [m.attempt for m in claim.messages] == [1, 1]
        await bus.nack(claim, only=[ident])  # its turn failed on its own: one attempt, one id
        await bus.ack(claim, only=[other])
        claim = await bus.claim("b")
        assert claim.messages[0].attempt == 2
        await bus.nack(claim, count=True)
        claim = await bus.claim("b")
        assert claim.ids == () and claim.dead_letters == ((ident, "its turn failed 2 times"),)
        [dead] = await bus.dead_letters()
        assert (dead.id, dead.attempts, dead.deliveries) == (ident, 2, 5)


@pytest.mark.anyio
async def test_fail_dead_letters_at_once_and_the_rest_flow(
    backend: Backend, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="peerbus")
    async with backend() as bus:
        ids = [await bus.submit("a", "b", {"n": n}) for n in range(3)]
        claim = await bus.claim("b")
        assert (await bus.ack(claim, only=[ids[0], ids[2]])).settled == (ids[0], ids[2])
        assert (await bus.stats()).recipients[0].watermark == ids[0]  # held by the lease
        reason = "cannot be handled:\n" + "x" * 1000
        result = await bus.fail(claim, reason=reason, only=[ids[1], ids[2]])
        assert (result.settled, result.lost) == ((ids[1],), (ids[2],))  # ids[2] is done
        again = await bus.fail(claim, reason="twice", only=[ids[1]])
        assert again.settled == (ids[1],)  # failing twice is harmless
        [dead] = await bus.dead_letters()
        assert dead.id == ids[1] and dead.reason.startswith("cannot be handled: xxx")
        assert len(dead.reason) == 500 and (dead.attempts, dead.deliveries) == (0, 1)
        assert any(f"dead-lettered message {ids[1]}" in r.getMessage() for r in caplog.records)
        stats = (await bus.stats()).recipients[0]
        assert (stats.watermark, stats.failed, stats.leased) == (ids[2], 1, 0)
        # The contract status follows a dead letter in owned mode; a foreign row is left be.
        status = "failed" if bus.mode == "owned" else "pending"
        assert [r.status for r in await bus.history()] == ["done", status, "done"]
        assert (await bus.claim("b")).ids == ()
        assert await bus.retry(ids=[ids[1]]) == 1
        assert (await bus.claim("b")).ids == (ids[1],)


@pytest.mark.anyio
async def test_fail_cannot_touch_what_a_newer_claim_holds(
    backend: Backend, clock: FakeClock
) -> None:
    async with backend() as bus:
        ident = await bus.submit("a", "b", {"n": 1})
        stale = await bus.claim("b", lease=5)
        clock.advance(6)
        fresh = await bus.claim("b")
        assert (await bus.fail(stale, reason="too late")).lost == (ident,)
        assert await bus.dead_letters() == []
        assert (await bus.ack(fresh)).settled == (ident,)


def test_a_claim_reports_the_dead_letters_of_all_its_steps(
    sync_bus: BusFile, insert_raw: Callable[..., int], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Two rows per transaction, so five bad rows take the claim three steps.
    monkeypatch.setattr("peerbus.sqlite.claim.SCAN_CAP", 2)
    texts = ["{broken", "[1]", '"a string"', "{oops", "true"]
    bad = [insert_raw("b", text) for text in texts]
    good = pb.submit(sync_bus, "a", "b", {"n": 1})
    claim = pb.claim_batch(sync_bus, "b")
    assert claim.ids == (good,)
    assert [i for i, _ in claim.dead_letters] == bad and claim.failed == 5
    stored = {d.id: d.reason for d in pb.dead_letters(sync_bus)}
    assert dict(claim.dead_letters) == stored
    assert "not valid JSON" in stored[bad[0]] and "array" in stored[bad[1]]


@pytest.mark.anyio
async def test_settled_names_what_can_never_come_back(backend: Backend, clock: FakeClock) -> None:
    async with backend() as bus:
        acked, failed, owed, other = [await bus.submit("a", "b", {"n": n}) for n in range(4)]
        claim = await bus.claim("b")
        await bus.ack(claim, only=[acked])
        await bus.fail(claim, reason="no", only=[failed])
        await bus.nack(claim, only=[owed, other], count=False)
        gone = 10_000  # an id no row has (pruned, or never written)
        assert await bus.settled("b", [acked, failed, owed, gone]) == {acked, failed, gone}
        assert await bus.settled("c", [acked, owed]) == set()  # b's receipts are b's only
