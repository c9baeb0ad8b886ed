"""TurnStore specifics that the async wrapper does not change: reopening, queries, the clock."""

from __future__ import annotations

from collections.abc import Callable
from itertools import count
from pathlib import Path

import pytest

from runtime.errors import StoreError
from runtime.rows import NewRow
from runtime.store import TurnStore

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
    assert store._conn.execute("PRAGMA user_version").fetchone()[0] == 1
    assert store._conn.execute("PRAGMA busy_timeout").fetchone()[0] == 5_000


def test_rows_reads_a_large_window_in_one_query(store: TurnStore, make_row: MakeRow) -> None:
    store.append([make_row(f"row {n} " * 50) for n in range(2_000)])
    statements: list[str] = []
    store._conn.set_trace_callback(statements.append)
    rows = store.rows()
    store._conn.set_trace_callback(None)
    assert len(rows) == 2_000
    selects = [s for s in statements if s.lstrip().upper().startswith("SELECT")]
    assert len(selects) == 1 and "FROM window_rows" in selects[0]


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
