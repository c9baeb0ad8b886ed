"""The turn store contract, run against TurnStore (sync) and AsyncTurnStore, on asyncio and trio.

Each test gets `store`, an object whose methods are awaited; for the sync backend each call is
simply made in place, for the async backend it goes through the worker-thread wrapper.
"""

from __future__ import annotations

from typing import Any

import pytest

from runtime.errors import StoreError
from runtime.window.rows import NewRow

pytestmark = pytest.mark.anyio


@pytest.fixture
def store(either_store: Any) -> Any:
    return either_store


def text_row(text: str, **fields: Any) -> NewRow:
    return NewRow(role=fields.pop("role", "user"), blocks=({"type": "text", "text": text},),
                  tokens=fields.pop("tokens", 3), **fields)  # fmt: skip


async def test_fresh_store_is_empty(store: Any) -> None:
    assert await store.rows() == []
    assert await store.slots() == []
    assert await store.markers() == []
    assert await store.consumed_ids() == set()
    assert await store.get_meta("anything") is None


async def test_append_returns_ids_in_window_order(store: Any) -> None:
    ids = await store.append([text_row("a"), text_row("b", role="assistant", tokens_exact=True)])
    rows = await store.rows()
    assert [r.id for r in rows] == ids == sorted(ids)
    assert [(r.role, r.blocks[0]["text"], r.status) for r in rows] == [
        ("user", "a", "complete"),
        ("assistant", "b", "complete"),
    ]
    assert rows[1].tokens_exact and not rows[0].tokens_exact
    assert await store.row(ids[0]) == rows[0]
    assert await store.row(9999) is None


async def test_blocks_round_trip_exactly(store: Any) -> None:
    blocks = (
        {"type": "thinking", "thinking": "hmm", "signature": "sig=="},
        {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls", "n": 1.25}},
        {"z_first": 1, "type": "text", "text": "key order kept 🧠"},
    )
    (row_id,) = await store.append([NewRow("assistant", blocks, 10)])
    row = await store.row(row_id)
    assert row.blocks == blocks
    assert [list(b) for b in row.blocks] == [list(b) for b in blocks]


async def test_turn_lifecycle_and_consumed_ids(store: Any) -> None:
    user = await store.begin_turn(text_row("question", consumed_ids=(7, 8)))
    assert (await store.row(user)).status == "in_flight"
    assert await store.consumed_ids() == set(), "an unanswered input does not count as consumed"
    ids = await store.commit_turn(
        user, [text_row("answer", role="assistant")], user_tokens=42, user_tokens_exact=True
    )
    committed = await store.row(user)
    assert (committed.status, committed.tokens, committed.tokens_exact) == ("complete", 42, True)
    assert ids == [user + 1]
    assert await store.consumed_ids() == {7, 8}
    with pytest.raises(StoreError, match="not in_flight"):
        await store.commit_turn(user, [text_row("again")])
    assert len(await store.rows()) == 2, "a refused commit writes nothing"


async def test_recover_interrupted_keeps_the_input(store: Any) -> None:
    user = await store.begin_turn(text_row("unanswered", consumed_ids=(5,)))
    assert await store.recover_interrupted() == [user]
    row = await store.row(user)
    assert row.status == "interrupted" and row.blocks[0]["text"] == "unanswered"
    assert await store.consumed_ids() == set(), "its bus messages will be delivered again"
    assert await store.recover_interrupted() == []


async def test_delete_rows_never_deletes_in_flight(store: Any) -> None:
    done = await store.append([text_row("a"), text_row("b")])
    pending = await store.begin_turn(text_row("c"))
    assert await store.delete_rows([*done, pending, 999]) == 2
    assert [r.id for r in await store.rows()] == [pending]
    assert await store.delete_rows([]) == 0


async def test_replace_blocks_pin_and_label(store: Any) -> None:
    (row_id,) = await store.append([text_row("big")])
    await store.replace_blocks(row_id, ({"type": "text", "text": "stub"},), 1, compressed=True)
    await store.set_pinned(row_id, True)
    await store.set_label(row_id, "keep-me")
    row = await store.row(row_id)
    assert (row.blocks[0]["text"], row.tokens, row.compressed) == ("stub", 1, True)
    assert (row.pinned, row.label) == (True, "keep-me")
    await store.replace_blocks(row_id, ({"type": "text", "text": "x"},), 5, tokens_exact=True)
    assert (await store.row(row_id)).compressed, "compressed=None leaves the flag alone"
    for call in (
        store.set_pinned(404, True),
        store.set_label(404, "x"),
        store.replace_blocks(404, (), 0),
    ):
        with pytest.raises(StoreError, match="no row 404") as info:
            await call
        assert info.value.row_id == 404


async def test_clear_keeps_pins_and_slots_unless_asked(store: Any) -> None:
    await store.append([text_row("a"), text_row("pinned", pinned=True), text_row("b")])
    await store.upsert_slot("hp", "system", "73")
    pending = await store.begin_turn(text_row("in flight"))
    assert await store.clear() == 2
    assert [r.blocks[0]["text"] for r in await store.rows()] == ["pinned", "in flight"]
    assert len(await store.slots()) == 1
    assert await store.clear(keep_pinned=False) == 1
    assert [r.id for r in await store.rows()] == [pending]
    assert await store.slots() == []


async def test_slots_update_in_place_and_keep_dense_positions(store: Any) -> None:
    first = await store.upsert_slot("health", "system", "HP 73")
    await store.upsert_slot("stamina", "system", "41")
    await store.upsert_slot("hunger", "system", "62", position=0)
    assert [(s.label, s.position) for s in await store.slots()] == [
        ("hunger", 0),
        ("health", 1),
        ("stamina", 2),
    ]
    updated = await store.upsert_slot("health", "user", "HP 70")
    assert (updated.role, updated.content, updated.position) == ("user", "HP 70", 1)
    assert first.position == 0 and len(await store.slots()) == 3
    moved = await store.move_slot("stamina", 0)
    assert moved.position == 0
    assert [s.label for s in await store.slots()] == ["stamina", "hunger", "health"]
    await store.move_slot("stamina", 99)
    assert [s.label for s in await store.slots()] == ["hunger", "health", "stamina"]
    assert await store.delete_slot("health") is True
    assert await store.delete_slot("health") is False
    assert [(s.label, s.position) for s in await store.slots()] == [("hunger", 0), ("stamina", 1)]
    with pytest.raises(StoreError, match="no slot"):
        await store.move_slot("nope", 0)
    with pytest.raises(StoreError, match="non-empty label"):
        await store.upsert_slot("", "system", "x")


async def test_markers_and_rows_since(store: Any) -> None:
    before = await store.mark_segment("empty-start")
    assert before.after_row_id == 0
    await store.append([text_row("a")])
    marker = await store.mark_segment("work")
    later = await store.append([text_row("b"), text_row("c")])
    assert [r.id for r in await store.rows_since("work")] == later
    assert len(await store.rows_since("empty-start")) == 3
    assert [m.name for m in await store.markers()] == ["empty-start", "work"]
    assert marker.after_row_id == later[0] - 1
    moved = await store.mark_segment("work")
    assert moved.after_row_id == later[-1] and len(await store.markers()) == 2
    with pytest.raises(StoreError, match="no marker named 'nope'"):
        await store.rows_since("nope")


async def test_meta_is_a_small_key_value_table(store: Any) -> None:
    await store.set_meta("forced_pinned_evictions", "1")
    await store.set_meta("forced_pinned_evictions", "2")
    assert await store.get_meta("forced_pinned_evictions") == "2"


async def test_ids_are_never_reused(store: Any) -> None:
    ids = await store.append([text_row("a"), text_row("b")])
    await store.delete_rows(ids)
    assert (await store.append([text_row("c")]))[0] == ids[-1] + 1
