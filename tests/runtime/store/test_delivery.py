"""Delivery state specifics of TurnStore: pruning by age, the v2 -> v3 backfill, lookup cost."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

from runtime.store import LATEST_VERSION, TurnStore, row_sql
from runtime.store.schema import MIGRATIONS
from runtime.window.rows import Consumed, NewRow, OutboxDraft

DAY = 24 * 3600.0


class Clock:
    """The store's clock, moved by hand."""

    def __init__(self) -> None:
        self.now = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)

    def __call__(self) -> str:
        return self.now.isoformat(timespec="milliseconds")

    def advance(self, days: float) -> None:
        self.now += timedelta(days=days)


def turn(store: TurnStore, text: str, **delivery: object) -> int:
    user = store.begin_turn(NewRow("user", ({"type": "text", "text": text},), 1))
    store.commit_turn(user, [], **delivery)  # type: ignore[arg-type]
    return user


def send(key: str) -> OutboxDraft:
    return OutboxDraft("eng", {"text": key}, None, key)


def test_prune_deletes_only_settled_state_older_than_the_cutoff(store_path: Path) -> None:
    clock = Clock()
    with TurnStore.open(store_path, clock=clock) as store:
        turn(store, "old", consumed=Consumed("bus", (1, 2)), outbox=[send("p"), send("f")])
        turn(store, "legacy", consumed=Consumed("", (3,)))
        turn(store, "pending", outbox=[send("never published")])
        store.mark_acked("bus", [1])  # 2 stays unacked: the bus may hand it out again
        store.mark_published("p", 10)
        store.mark_send_failed("f", "refused")
        clock.advance(days=8)
        turn(store, "recent", consumed=Consumed("bus", (4,)), outbox=[send("q")])
        turn(store, "recent legacy", consumed=Consumed("", (5,)))
        store.mark_acked("bus", [4])
        store.mark_published("q", 11)

        assert store.prune_delivery(older_than=7 * DAY) == 4  # ids 1 and 3, sends p and f
        assert store.committed("bus", [1, 2, 3, 4, 5]) == {2: 1, 4: 4, 5: 5}
        assert [e.key for e in store.outbox(limit=10)] == ["never published", "q"]
        assert store.prune_delivery(older_than=7 * DAY) == 0

        clock.advance(days=30)
        assert store.prune_delivery(older_than=7 * DAY) == 3  # 4, legacy 5, send q
        assert store.committed("bus", [2]) == {2: 1}, "never acked: kept however old"
        assert [e.key for e in store.outbox_pending()] == ["never published"]


def make_v2_store(path: Path) -> dict[str, int]:
    """A turns.sqlite as schema v2 left it, with consumed ids on rows of every status."""
    conn = sqlite3.connect(path, isolation_level=None)
    for step in MIGRATIONS[:2]:
        step(conn)
    conn.execute("PRAGMA user_version = 2")

    def row(text: str, status: str, ids: tuple[int, ...]) -> int:
        new = NewRow("user", ({"type": "text", "text": text},), 1, consumed_ids=ids)
        return row_sql.insert_rows(conn, [new], ts="2026-04-01T00:00:00.000+00:00",
                                   status=status)[0]  # type: ignore[arg-type]  # fmt: skip

    made = {
        "answered": row("answered", "complete", (7, 8)),
        "again": row("delivered again", "complete", (8, 9)),
        "interrupted": row("crashed", "interrupted", (10,)),
        "in_flight": row("running", "in_flight", (11,)),
    }
    conn.close()
    return made


def test_a_v2_store_migrates_and_backfills_the_consumed_ids(store_path: Path) -> None:
    rows = make_v2_store(store_path)
    with TurnStore.open(store_path) as store:
        report = store.migration
        assert (report.action, report.from_version, report.to_version) == ("migrated", 2, 3)
        assert LATEST_VERSION == 3
        assert report.backup is not None and report.backup.name == "turns.sqlite.v2.bak"
        answered, again = rows["answered"], rows["again"]
        found = store.committed("any-bus", [7, 8, 9, 10, 11])
        assert found == {7: answered, 8: answered, 9: again}, "unanswered inputs do not count"
        legacy = store._conn.execute(
            "SELECT DISTINCT source, acked_at IS NULL, committed_at > '2026-05' FROM delivered"
        ).fetchall()
        assert legacy == [("", 1, 1)], "unknown source, unacked, committed at migration time"
        assert [r.id for r in store.rows()] == sorted(rows.values())
        assert store.outbox_pending() == []


def test_committed_looks_up_only_the_given_ids(tmp_path: Path) -> None:
    def steps_for_one_lookup(history: int) -> int:
        with TurnStore.open(tmp_path / f"{history}.sqlite") as store:
            turn(store, "many", consumed=Consumed("bus", tuple(range(history))))
            turn(store, "legacy", consumed=Consumed("", tuple(range(history, 2 * history))))
            steps = 0

            def count() -> int:
                nonlocal steps
                steps += 1
                return 0

            store._conn.set_progress_handler(count, 1)
            assert store.committed("bus", [3, history + 1]) == {3: 1, history + 1: 2}
            store._conn.set_progress_handler(None, 1)
            return steps

    small, large = steps_for_one_lookup(10), steps_for_one_lookup(5_000)
    assert large < 2 * small, f"{large} steps for 10,000 stored ids against {small} for 20"
