"""TurnStore specifics that the async wrapper does not change: reopening, queries, the clock."""

from __future__ import annotations

from collections.abc import Callable
from itertools import count
from pathlib import Path

import pytest

from runtime.errors import StoreError
from runtime.store import LATEST_VERSION, TurnStore
from runtime.window.rows import NewRow

MakeRow = Callable[..., NewRow]


def test_state_survives_reopening(store_path: Path, make_row: MakeRow) -> None:
    with TurnStore.open(store_path) as first:
        assert first.migration.action == "created"
        first.append([make_row("kept", pinned=True, label="x")])
        first.upsert_slot("s", "system", "v")
        snapshot = first.snapshot()
    with TurnStore.open(store_path) as second:
        assert second.snapshot() == snapshot
        assert second.migration.action == "up_to_date"


def test_file_uses_wal_and_records_its_schema_version(store: TurnStore) -> None:
    assert store._conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert store._conn.execute("PRAGMA user_version").fetchone()[0] == LATEST_VERSION
    assert store._conn.execute("PRAGMA busy_timeout").fetchone()[0] == 5_000


def test_rows_reads_a_large_window_without_per_row_queries(
    store: TurnStore, make_row: MakeRow
) -> None:
    store.append([make_row(f"row {n} " * 50) for n in range(2_000)])
    statements: list[str] = []
    store._conn.set_trace_callback(statements.append)
    rows = store.rows()
    first = [s for s in statements if s.lstrip().upper().startswith("SELECT")]
    statements.clear()
    again = store.rows()
    store._conn.set_trace_callback(None)
    second = [s for s in statements if s.lstrip().upper().startswith("SELECT")]
    assert len(rows) == 2_000 and again == rows
    # First read: the revision list and one query for all rows; an unchanged window is not
    # read again at all (runtime/store/window_mirror.py: only the counters are asked).
    assert len([s for s in first if "FROM window_rows" in s]) == 2
    assert [s for s in second if "FROM window_rows" in s] == []


def test_cached_rows_see_changes_made_by_another_connection(
    store: TurnStore, make_row: MakeRow
) -> None:
    ids = store.append([make_row("one"), make_row("two"), make_row("three")])
    assert [r.id for r in store.rows()] == ids
    with TurnStore.open(store.path) as other:
        other.replace_blocks(ids[1], [{"type": "text", "text": "TWO"}], 1)
        other.delete_rows([ids[0]])
        other.set_pinned(ids[2], True)
    rows = store.rows()
    assert [r.id for r in rows] == ids[1:]
    assert rows[0].blocks == ({"type": "text", "text": "TWO"},)
    assert rows[1].pinned


def test_cached_rows_see_a_row_imported_again_under_the_same_id(
    store: TurnStore, make_row: MakeRow
) -> None:
    store.append([make_row("before")])
    snapshot = store.snapshot()
    store.replace_blocks(snapshot.rows[0].id, [{"type": "text", "text": "after"}], 1)
    assert store.rows()[0].blocks[0]["text"] == "after"
    store.restore(snapshot, replace=True)
    assert store.rows()[0].blocks[0]["text"] == "before"


def test_timestamps_come_from_the_injected_clock(store_path: Path, make_row: MakeRow) -> None:
    ticks = count(1)
    with TurnStore.open(store_path, clock=lambda: f"t{next(ticks)}") as store:
        store.append([make_row("a")])
        slot = store.upsert_slot("s", "system", "v")
        marker = store.mark_segment("m")
        assert (store.rows()[0].ts, slot.updated_at, marker.ts) == ("t1", "t2", "t3")


def test_missing_directory_is_a_store_error_naming_the_file(tmp_path: Path) -> None:
    path = tmp_path / "no-such-instance" / "turns.sqlite"
    with pytest.raises(StoreError) as info:
        TurnStore.open(path)
    assert info.value.path == path and str(path) in str(info.value)
    assert not path.parent.exists()
