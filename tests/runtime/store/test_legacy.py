"""Migrating an instance directory written by the original mnemara, and doing it again."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from runtime.errors import StoreError
from runtime.instance.home import InstancePaths
from runtime.store import LATEST_VERSION, TurnStore, migrate_instance
from runtime.store.legacy import migrate_instance as migrate_from_legacy_module
from runtime.window.rows import NewRow

ORIGINAL_SCHEMA = """CREATE TABLE turns (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    ts TEXT,
    role TEXT NOT NULL,
    content TEXT,
    tool_uses TEXT,
    tokens_in INTEGER,
    tokens_out INTEGER,
    pin_label TEXT,
    compressed_read_stub INTEGER DEFAULT 0
)"""

READ_BLOCK = {"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {"file_path": "/a"}}
ORIGINAL_ROWS: list[dict[str, Any]] = [
    {"ts": "2026-05-01T10:00:00", "role": "user", "content": "how do I check the lease?",
     "tokens_in": 12},
    {"ts": "2026-05-01T10:00:05", "role": "assistant",
     "content": json.dumps([{"type": "text", "text": "Let me look."}, READ_BLOCK]),
     "tool_uses": json.dumps([READ_BLOCK]), "tokens_in": 5000, "tokens_out": 40},
    {"ts": "2026-05-01T10:00:09", "role": "assistant", "content": "Running it.",
     "tool_uses": json.dumps([{"name": "Bash", "input": {"command": "ls"}}]), "tokens_out": 0},
    {"ts": "2026-05-01T10:01:00", "role": "system", "content": "HP: 73 / 100",
     "pin_label": "03-health"},
    {"ts": 1746093720.5, "role": "user", "content": "[unchanged since row 2]",
     "compressed_read_stub": 1},
    {"ts": "2026-05-01T10:03:00", "role": "assistant", "content": "", "tool_uses": "{broken"},
    {"ts": "2026-05-01T10:04:00", "role": "tool", "content": "odd role", "pin_label": ""},
]  # fmt: skip


def write_original_instance(root: Path, rows: list[dict[str, Any]] = ORIGINAL_ROWS) -> Path:
    root.mkdir(parents=True)
    (root / "config.json").write_text('{"model": "claude-opus-4-7", "max_window_turns": 20}')
    conn = sqlite3.connect(root / "turns.sqlite")
    conn.execute(ORIGINAL_SCHEMA)
    for row in rows:
        columns = ", ".join(row)
        marks = ", ".join("?" for _ in row)
        conn.execute(f"INSERT INTO turns ({columns}) VALUES ({marks})", tuple(row.values()))
    conn.commit()
    conn.close()
    return root / "turns.sqlite"


@pytest.fixture
def original(mnemara_home: Path) -> InstancePaths:
    paths = InstancePaths.for_name("old", mnemara_home)
    write_original_instance(paths.root)
    return paths


def test_original_instance_migrates(original: InstancePaths) -> None:
    report = migrate_instance(original)
    assert report.action == "converted_legacy" and report.rows_converted == 7
    assert (report.from_version, report.to_version) == (0, LATEST_VERSION)
    assert report.backup == original.root / "turns.sqlite.original.bak"
    assert "converted 7 rows" in str(report) and "original kept at" in str(report)
    assert any("'tool' stored as 'user'" in note for note in report.notes)

    with TurnStore.open(original.turns) as store:
        rows = store.rows()
        assert [r.id for r in rows] == [1, 2, 3, 4, 5, 6, 7]
        assert all(r.status == "complete" and r.consumed_ids == () for r in rows)
        user, read, bash, pinned, stub, broken, odd = rows
        assert user.blocks == ({"type": "text", "text": "how do I check the lease?"},)
        assert (user.tokens, user.tokens_exact) == (12, True)
        assert read.blocks == ({"type": "text", "text": "Let me look."}, READ_BLOCK)
        assert (read.tokens, read.tokens_exact) == (40, True), "output tokens, not the prompt"
        assert bash.blocks[1] == {
            "type": "tool_use",
            "id": "legacy_3_0",
            "name": "Bash",
            "input": {"command": "ls"},
        }
        assert not bash.tokens_exact and bash.tokens > 0, "estimated when not recorded"
        assert (pinned.pinned, pinned.label) == (True, "03-health")
        assert stub.compressed and stub.ts.startswith("2025-05-01T10:02:00")
        assert broken.blocks == (
            {"type": "text", "text": "[original tool_uses, unparsed] {broken"},
        )
        assert (odd.role, odd.pinned, odd.label) == ("user", True, "")
        assert not any(r.pinned for r in (user, read, bash, stub, broken))
        assert store.get_meta("converted_from_original_at")
        tables = {name for (name,) in store._conn.execute("SELECT name FROM sqlite_master")}
        assert "turns" not in tables


def test_backup_is_the_untouched_original(original: InstancePaths) -> None:
    report = migrate_instance(original)
    assert report.backup is not None
    backup = sqlite3.connect(report.backup)
    assert backup.execute("SELECT COUNT(*) FROM turns").fetchone() == (7,)
    assert backup.execute("PRAGMA user_version").fetchone() == (0,)
    backup.close()


def test_migration_is_idempotent(original: InstancePaths) -> None:
    first = migrate_instance(original)
    with TurnStore.open(original.turns) as store:
        converted = store.snapshot()
    again = migrate_instance(original)
    assert again.action == "up_to_date" and again.backup is None
    assert f"already at schema v{LATEST_VERSION}" in str(again)
    with TurnStore.open(original.turns) as store:
        assert store.snapshot() == converted
    assert sorted(p.name for p in original.root.glob("*.bak")) == [first.backup.name]


def test_new_rows_continue_after_the_original_ids(original: InstancePaths) -> None:
    migrate_instance(original)
    with TurnStore.open(original.turns) as store:
        store.delete_rows([7])
        assert store.append([NewRow("user", (), 1)]) == [8]


def test_opening_an_original_file_refuses_and_names_migrate(original: InstancePaths) -> None:
    before = original.turns.read_bytes()
    with pytest.raises(StoreError) as refused:
        TurnStore.open(original.turns)
    assert "`mnemara migrate --instance old` converts it" in str(refused.value)
    assert "`mnemara show --instance old` reads it" in str(refused.value)
    assert original.turns.read_bytes() == before
    assert sorted(p.name for p in original.root.iterdir()) == ["config.json", "turns.sqlite"]


def test_a_read_only_open_reads_the_original_as_converted_and_writes_nothing(
    original: InstancePaths,
) -> None:
    before = original.turns.read_bytes()
    with TurnStore.open_read_only(original.turns) as store:
        assert store.migration.action == "converted_legacy" and store.migration.backup is None
        assert [r.id for r in store.rows()] == [1, 2, 3, 4, 5, 6, 7]
        with pytest.raises(StoreError):
            store.append([NewRow("user", (), 1)])
    assert original.turns.read_bytes() == before
    assert sorted(p.name for p in original.root.iterdir()) == ["config.json", "turns.sqlite"]
    migrate_instance(original)
    with TurnStore.open_read_only(original.turns) as store:
        assert store.migration.action == "up_to_date" and len(store.rows()) == 7


def test_a_read_only_open_of_a_missing_store_creates_nothing(mnemara_home: Path) -> None:
    path = mnemara_home / "nothing" / "turns.sqlite"
    with TurnStore.open_read_only(path) as store:
        assert store.rows() == []
    assert not path.parent.exists()


MARKED_ROWS: list[dict[str, Any]] = [
    {"ts": "2026-05-01T10:00:00", "role": "user", "content": "first"},
    {"ts": "2026-05-01T10:00:01", "role": "marker", "content": json.dumps("refactor")},
    {"ts": "2026-05-01T10:00:02", "role": "assistant", "content": "second"},
    {"ts": "2026-05-01T10:00:03", "role": "marker", "content": json.dumps("review"),
     "pin_label": "odd"},
    {"ts": "2026-05-01T10:00:04", "role": "user", "content": "third"},
    {"ts": "2026-05-01T10:00:05", "role": "marker", "content": json.dumps("refactor")},
    {"ts": "2026-05-01T10:00:06", "role": "marker", "content": "not json"},
    {"ts": "2026-05-01T10:00:07", "role": "assistant", "content": "fourth"},
]  # fmt: skip


def test_the_originals_markers_stay_markers(mnemara_home: Path) -> None:
    paths = InstancePaths.for_name("marked", mnemara_home)
    write_original_instance(paths.root, MARKED_ROWS)
    report = migrate_instance(paths)
    assert (report.rows_converted, report.markers_converted) == (4, 3)
    text = str(report)
    assert "converted 4 rows and 3 markers from the original mnemara format" in text
    assert (
        "  marker 'refactor' (original row 2) superseded by its later mark (original row 6)" in text
    )
    assert "  marker 'review' (original row 4): its pin 'odd' dropped" in text
    assert "  marker 'not json' (original row 7): content 'not json' is not a JSON name" in text
    with TurnStore.open(paths.turns) as store:
        rows = store.rows()
        assert [(r.id, r.role) for r in rows] == [
            (1, "user"), (3, "assistant"), (5, "user"), (8, "assistant")
        ]  # fmt: skip
        assert not any("refactor" in json.dumps(r.blocks) for r in rows)
        assert [(m.name, m.after_row_id) for m in store.markers()] == [
            ("review", 3), ("refactor", 5), ("not json", 5)
        ]  # fmt: skip
        assert [r.id for r in store.rows_since("refactor")] == [8]


def test_unflushed_wal_content_is_in_the_backup_and_the_conversion(mnemara_home: Path) -> None:
    paths = InstancePaths.for_name("walled", mnemara_home)
    path = write_original_instance(paths.root, ORIGINAL_ROWS[:1])
    writer = sqlite3.connect(path)
    writer.execute("PRAGMA journal_mode = WAL")
    writer.execute("INSERT INTO turns (role, content) VALUES ('user', 'only in the WAL')")
    writer.commit()  # kept open, so the row has not been checkpointed into the main file
    report = migrate_instance(paths)
    writer.close()
    assert report.rows_converted == 2
    backup = sqlite3.connect(report.backup)
    assert backup.execute("SELECT content FROM turns ORDER BY id").fetchall()[-1] == (
        "only in the WAL",
    )
    backup.close()


def test_missing_store_is_reported_not_created(mnemara_home: Path) -> None:
    paths = InstancePaths.for_name("fresh", mnemara_home)
    paths.root.mkdir()
    report = migrate_instance(paths)
    assert report.action == "absent" and not paths.turns.exists()
    assert "nothing to migrate" in str(report)


def test_current_store_migrates_as_a_no_op(mnemara_home: Path) -> None:
    paths = InstancePaths.for_name("current", mnemara_home)
    paths.root.mkdir()
    TurnStore.open(paths.turns).close()
    assert migrate_from_legacy_module(paths).action == "up_to_date"


def test_original_ids_that_are_not_usable_are_renumbered(mnemara_home: Path) -> None:
    paths = InstancePaths.for_name("textids", mnemara_home)
    paths.root.mkdir()
    conn = sqlite3.connect(paths.turns)
    conn.execute("CREATE TABLE turns (id TEXT, role TEXT, content TEXT, pin_label TEXT)")
    conn.executemany(
        "INSERT INTO turns VALUES (?, ?, ?, NULL)",
        [("a", "user", "one"), ("b", "assistant", "two")],
    )
    conn.commit()
    conn.close()
    report = migrate_instance(paths)
    assert any("renumbered" in note for note in report.notes)
    assert any("no compressed_read_stub" in note for note in report.notes)
    with TurnStore.open(paths.turns) as store:
        assert [(r.id, r.blocks[0]["text"]) for r in store.rows()] == [(1, "one"), (2, "two")]
