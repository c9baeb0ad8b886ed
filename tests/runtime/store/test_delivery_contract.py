"""The delivery part of the store contract (consumed ids, the outbox), on both store backends.

Delivery state is written with a turn's commit and outlives the window's rows; these tests
read it back through the store's own methods, and the raw tables only where no method shows it.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from runtime.errors import StoreError
from runtime.window.rows import Consumed, NewRow, OutboxDraft

pytestmark = pytest.mark.anyio


@pytest.fixture
def store(either_store: Any) -> Any:
    return either_store


def text_row(text: str, role: str = "user") -> NewRow:
    return NewRow(role, ({"type": "text", "text": text},), 3)  # type: ignore[arg-type]


def draft(key: str, recipient: str | None = "eng", **payload: Any) -> OutboxDraft:
    return OutboxDraft(recipient, payload or {"text": key}, None, key)


def delivered_rows(path: Path) -> list[tuple[str, int, int, str | None]]:
    """(source, message_id, user_row_id, acked_at) of every delivered row, read directly."""
    conn = sqlite3.connect(path)
    try:
        return conn.execute(
            "SELECT source, message_id, user_row_id, acked_at FROM delivered"
            " ORDER BY source, message_id"
        ).fetchall()
    finally:
        conn.close()


async def commit(store: Any, text: str, **delivery: Any) -> int:
    user = await store.begin_turn(text_row(text))
    await store.commit_turn(user, [text_row("ok", "assistant")], **delivery)
    return int(user)


async def test_commit_records_consumed_ids_and_sends(store: Any) -> None:
    sends = [
        OutboxDraft("eng", {"text": "done", "n": [1, 2]}, "status", "k1"),
        OutboxDraft(None, {"text": "to all"}, None, "k2"),
    ]
    user = await commit(store, "q", consumed=Consumed("bus-a", (7, 8)), outbox=sends)
    assert await store.committed("bus-a", [7, 8, 9]) == {7: user, 8: user}
    assert await store.committed("bus-b", [7, 8]) == {}, "ids are unique per source only"
    assert await store.committed("bus-a", []) == {}
    pending = await store.outbox_pending()
    assert [(e.key, e.label, e.position, e.user_row_id) for e in pending] == [
        ("k1", f"{user}.0", 0, user),
        ("k2", f"{user}.1", 1, user),
    ]
    first, second = pending
    assert (first.recipient, first.topic, first.payload) == ("eng", "status", sends[0].payload)
    assert (second.recipient, second.topic) == (None, None), "None means everyone"
    assert first.published_at is None and first.message_id is None and first.failed is None


async def test_consumed_ids_outlive_the_rows_that_carried_them(store: Any) -> None:
    user = await commit(store, "q", consumed=Consumed("bus", (5,)))
    await store.delete_rows([user, user + 1])
    assert await store.rows() == []
    await store.clear(keep_pinned=False)
    assert await store.committed("bus", [5]) == {5: user}


async def test_a_recorded_id_keeps_its_first_turn(store: Any) -> None:
    first = await commit(store, "one", consumed=Consumed("bus", (1, 2)))
    second = await commit(store, "two", consumed=Consumed("bus", (2, 3)))
    assert await store.committed("bus", [1, 2, 3]) == {1: first, 2: first, 3: second}


async def test_unacked_lists_a_sources_ids_until_their_ack_is_noted(store: Any) -> None:
    await commit(store, "one", consumed=Consumed("bus", (7, 3)))
    await commit(store, "two", consumed=Consumed("bus", (9,)))
    await commit(store, "other", consumed=Consumed("elsewhere", (4,)))
    await commit(store, "old", consumed=Consumed("", (5,)))  # legacy rows age out instead
    assert await store.unacked("bus") == [3, 7, 9]
    assert await store.unacked("bus", limit=1) == [3]
    await store.mark_acked("bus", [7, 9])
    assert await store.unacked("bus") == [3]


async def test_sends_wait_for_a_publisher_of_their_own_source(store: Any) -> None:
    await commit(store, "a", consumed=Consumed("bus-a", ()), outbox=[draft("to-a")])
    await commit(store, "b", consumed=Consumed("bus-b", (1,)), outbox=[draft("to-b")])
    await commit(store, "anywhere", outbox=[draft("unknown")])  # no source: any publisher
    assert [e.key for e in await store.outbox_pending("bus-a")] == ["to-a", "unknown"]
    assert [e.key for e in await store.outbox_pending("bus-b")] == ["to-b", "unknown"]
    assert [(e.key, e.source) for e in await store.outbox_pending()] == [
        ("to-a", "bus-a"), ("to-b", "bus-b"), ("unknown", "")]  # fmt: skip


async def test_a_commit_that_fails_writes_nothing(store: Any, store_path: Path) -> None:
    user = await store.begin_turn(text_row("q"))
    with pytest.raises(StoreError, match="UNIQUE"):
        await store.commit_turn(
            user,
            [text_row("answer", "assistant")],
            consumed=Consumed("bus", (4,)),
            outbox=[draft("same"), draft("same")],  # the second insert fails, last of all
        )
    assert [(r.id, r.status) for r in await store.rows()] == [(user, "in_flight")]
    assert await store.committed("bus", [4]) == {}
    assert delivered_rows(store_path) == []
    assert await store.outbox(limit=10) == []


async def test_unknown_source_matches_any_source(store: Any, store_path: Path) -> None:
    legacy = await commit(store, "old", consumed=Consumed("", (1, 2)))
    own = await commit(store, "new", consumed=Consumed("bus-a", (2, 3)))
    await commit(store, "other bus", consumed=Consumed("bus-b", (4,)))
    found = await store.committed("bus-a", [1, 2, 3, 4])
    assert found == {1: legacy, 2: own, 3: own}, "a source's own record wins over a legacy one"
    assert await store.mark_acked("bus-a", [1, 3, 4]) == 2
    acked = {(s, i) for s, i, _, at in delivered_rows(store_path) if at is not None}
    assert acked == {("", 1), ("bus-a", 3)}
    assert await store.mark_acked("bus-a", [1, 3]) == 0, "the first ack is kept"


async def test_published_and_failed_sends_leave_the_pending_list(store: Any) -> None:
    user = await commit(store, "q", outbox=[draft("a"), draft("b"), draft("c")])
    await store.mark_published("a", 501)
    await store.mark_published("a", 999)  # a retried publish keeps the first record
    await store.mark_send_failed("b", "recipient unknown")
    await store.mark_send_failed("a", "too late")  # a published send stays published
    assert [e.key for e in await store.outbox_pending()] == ["c"]
    a, b, c = await store.outbox(limit=10)
    assert (a.message_id, a.failed, a.published_at is not None) == (501, None, True)
    assert (b.failed, b.failed_at is not None, b.published_at) == ("recipient unknown", True, None)
    assert c.label == f"{user}.2"
    assert [e.key for e in await store.outbox(limit=2)] == ["b", "c"], "newest last"
    for call in (store.mark_published("nope", 1), store.mark_send_failed("nope", "x")):
        with pytest.raises(StoreError, match="no outbox entry with key 'nope'"):
            await call
