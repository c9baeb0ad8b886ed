"""Idempotent submits, on every backend and both async libraries: a key is sent once, across
calls, within one call and across a restart; a bad key writes nothing; prune forgets keys.
"""

from __future__ import annotations

import pytest

import peerbus.sqlite as pb
from peerbus import InvalidKeyError, Outgoing, PeerbusError
from peerbus.sqlite import BusFile
from tests.peerbus.conftest import Backend, FakeClock

KEY = "a:turn-7:call-1"


@pytest.mark.anyio
async def test_a_keyed_message_is_written_once_even_after_a_restart(backend: Backend) -> None:
    async with backend() as bus:
        first = await bus.submit("a", "b", {"n": 1}, key=KEY)
        assert await bus.submit("a", "b", {"n": 1}, key=KEY) == first
        other = await bus.submit("a", "b", {"n": 2}, key="a:turn-7:call-2")
        plain = [await bus.submit("a", "b", {"n": 3}) for _ in range(2)]  # no key: two rows
    async with backend() as restarted:
        # The restarted host replays the cut-off turn's send.
        assert await restarted.submit("a", "b", {"n": 1}, key=KEY) == first
        assert [r.id for r in await restarted.history()] == [first, other, *plain]
        assert (await restarted.claim("b")).ids == (first, other, *plain)


@pytest.mark.anyio
async def test_submit_many_honours_keys_within_and_across_calls(backend: Backend) -> None:
    async with backend() as bus:
        ids = await bus.submit_many(
            "a",
            [
                Outgoing("b", {"n": 1}, key="k1"),
                Outgoing("b", {"n": 2}),
                Outgoing("c", {"n": 3}, key="k1"),  # the same key again: the first's id
                Outgoing("b", {"n": 4}, key="k2"),
            ],
        )
        assert ids[2] == ids[0] and len(set(ids)) == 3
        again = await bus.submit_many(
            "a", [Outgoing("b", {"n": 4}, key="k2"), Outgoing("b", {"n": 5}, key="k3")]
        )
        assert again[0] == ids[3] and again[1] > ids[3]
        assert [r.id for r in await bus.history()] == sorted({*ids, *again})


@pytest.mark.anyio
async def test_a_bad_key_is_refused_before_anything_is_written(backend: Backend) -> None:
    async with backend() as bus:
        for bad in ("", "k" * 201, 7):
            with pytest.raises(InvalidKeyError) as err:
                await bus.submit("a", "b", {"n": 1}, key=bad)  # type: ignore[arg-type]
            assert isinstance(err.value, PeerbusError) and "1-200 characters" in str(err.value)
            with pytest.raises(InvalidKeyError):
                await bus.submit_many(
                    "a",
                    [Outgoing("b", {"n": 1}, key="fine"), Outgoing("b", {"n": 2}, key=bad)],  # type: ignore[arg-type]
                )
        assert await bus.history() == []
        # Nothing of the refused calls was kept, not even the good key before the bad one.
        fine = await bus.submit("a", "b", {"n": 1}, key="fine")
        assert await bus.submit("a", "b", {"n": 1}, key="k" * 200) == fine + 1


def test_prune_forgets_the_keys_of_the_rows_it_deletes(sync_bus: BusFile, clock: FakeClock) -> None:
    old = pb.submit(sync_bus, "a", "b", {"n": 1}, key="old")
    pb.ack(sync_bus, pb.claim_batch(sync_bus, "b"))
    kept = pb.submit(sync_bus, "a", "b", {"n": 2}, key="kept")  # pending: never pruned
    clock.advance(3600)
    assert pb.prune(sync_bus, older_than=60) == 1
    sent = sync_bus.conn.execute(f"SELECT key, message_id FROM {sync_bus.state}.peerbus_sent")
    assert dict(sent.fetchall()) == {"kept": kept}
    assert pb.submit(sync_bus, "a", "b", {"n": 2}, key="kept") == kept
    assert pb.submit(sync_bus, "a", "b", {"n": 1}, key="old") not in (old, kept)  # sent anew
