"""The store's window mirror: reads stay equal to a fresh read of the file whatever writes came,
from this store or another connection, and an unchanged window is not scanned again."""

from __future__ import annotations

import random
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from runtime.errors import StoreError
from runtime.store import TurnStore, row_sql
from runtime.window.plan import RowStat
from runtime.window.rows import NewRow

MakeRow = Callable[..., NewRow]
FULL_SCAN = "SELECT id, rev FROM window_rows ORDER BY id"


def on_file(path: Path) -> tuple[list[tuple[int, object]], int]:
    """(revision, row) pairs and total tokens, read by a connection of its own."""
    conn = sqlite3.connect(path)
    try:
        revs = dict(row_sql.select_revisions(conn))
        rows = row_sql.select_rows(conn)
    finally:
        conn.close()
    return [(revs[r.id], r) for r in rows], sum(r.tokens for r in rows)


def assert_true_to_file(store: TurnStore) -> None:
    revised, tokens = on_file(store.path)
    assert store.revised_rows() == revised
    assert store.rows() == [row for _, row in revised]
    assert store.window_totals() == (len(revised), tokens)
    assert store.row_stats() == [RowStat.of(row) for _, row in revised]


def test_random_writes_from_both_connections_keep_the_mirror_true(
    store: TurnStore, make_row: MakeRow
) -> None:
    rng = random.Random(12)
    with TurnStore.open(store.path) as other:
        for step in range(300):
            writer = store if rng.random() < 0.6 else other
            ids = [r.id for r in store.rows()]
            op = rng.choice(
                ["append", "turn", "replace", "pin", "label", "delete", "trim", "interrupt", "fail"]
            )
            if op == "append" or not ids:
                writer.append([make_row(f"s{step}", tokens=rng.randint(1, 50))])
            elif op == "turn":
                user = writer.begin_turn(make_row(f"in {step}"))
                writer.commit_turn(user, [make_row(f"out {step}", role="assistant")])
            elif op == "replace":
                target = rng.choice(ids)
                writer.replace_blocks(
                    target,
                    [{"type": "text", "text": f"r{step}"}],
                    rng.randint(1, 50),
                    compressed=rng.random() < 0.5,
                )
            elif op == "pin":
                writer.set_pinned(rng.choice(ids), rng.random() < 0.5)
            elif op == "label":
                writer.set_label(rng.choice(ids), f"l{step}")
            elif op == "delete":
                writer.delete_rows(rng.sample(ids, k=min(len(ids), rng.randint(1, 3))))
            elif op == "trim":  # the oldest rows, as a trim takes them
                writer.delete_rows(ids[: rng.randint(1, 3)])
            elif op == "interrupt":
                writer.begin_turn(make_row(f"cut {step}"))
                writer.recover_interrupted()
            else:  # a write that fails and rolls back
                with pytest.raises(StoreError):
                    writer.commit_turn(ids[0] if ids else 1, [make_row("never")])
            if rng.random() < 0.7:
                assert_true_to_file(store)
        assert_true_to_file(store)
        assert_true_to_file(other)


def test_clear_and_restore_are_seen(store: TurnStore, make_row: MakeRow) -> None:
    store.append([make_row("a", pinned=True), make_row("b"), make_row("c")])
    snapshot = store.snapshot()
    assert_true_to_file(store)
    store.clear()
    assert_true_to_file(store)
    store.restore(snapshot, replace=True)
    assert_true_to_file(store)


def window_selects(store: TurnStore, read: Callable[[], object]) -> list[str]:
    statements: list[str] = []
    store._conn.set_trace_callback(statements.append)
    try:
        read()
    finally:
        store._conn.set_trace_callback(None)
    return [s for s in statements if "FROM window_rows" in s]


def test_reads_cost_what_changed_not_the_window(store: TurnStore, make_row: MakeRow) -> None:
    store.append([make_row(f"row {n} " * 50) for n in range(2_000)])
    first = window_selects(store, store.rows)
    assert FULL_SCAN in first  # the first read learns the window
    assert window_selects(store, store.rows) == []  # unchanged: no query over the rows
    store.append([make_row("one more")])
    store.set_label(5, "x")
    again = window_selects(store, store.revised_rows)
    assert len(again) == 1 and FULL_SCAN not in again  # the two touched rows, by id
    assert_true_to_file(store)


def test_another_connections_commit_brings_a_full_check(
    store: TurnStore, make_row: MakeRow
) -> None:
    ids = store.append([make_row("a"), make_row("b")])
    store.rows()
    with TurnStore.open(store.path) as other:
        other.delete_rows([ids[0]])  # a delete stamps no revision: only data_version shows it
    assert FULL_SCAN in window_selects(store, store.rows)
    assert [r.id for r in store.rows()] == ids[1:]
