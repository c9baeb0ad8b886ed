"""Schema, migrations and compatibility mode: what a bus file looks like on disk."""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path

import pytest

from peerbus import (
    BusOpenError,
    BusOptions,
    ForeignSchemaError,
    SchemaTooNewError,
    close_bus,
    connect_bus,
    submit,
)
from peerbus.schema import CONTRACT_COLUMNS

HAND_MADE = """CREATE TABLE returns (id INTEGER PRIMARY KEY AUTOINCREMENT, agent_role TEXT,
    recipient_role TEXT, task_id TEXT, payload_json TEXT, status TEXT, submitted_at TEXT)"""


def _columns(path: Path) -> list[str]:
    conn = sqlite3.connect(path)
    try:
        return [str(r[1]) for r in conn.execute("PRAGMA table_info(returns)")]
    finally:
        conn.close()


def _schema_snapshot(path: Path) -> tuple[object, ...]:
    conn = sqlite3.connect(path)
    try:
        return (
            conn.execute("SELECT type, name, sql FROM sqlite_master ORDER BY name").fetchall(),
            conn.execute("PRAGMA user_version").fetchone(),
            conn.execute("PRAGMA journal_mode").fetchone(),
        )
    finally:
        conn.close()


def _hand_made(path: Path, rows: int = 0) -> Path:
    conn = sqlite3.connect(path)
    conn.execute(HAND_MADE)
    for i in range(rows):
        conn.execute(
            "INSERT INTO returns (agent_role, recipient_role, payload_json, status, submitted_at)"
            " VALUES ('a', 'b', ?, 'pending', 't')",
            (f'{{"n": {i}}}',),
        )
    conn.commit()
    conn.close()
    return path


def test_a_new_file_has_the_contract_columns_first_and_our_additions(tmp_path: Path) -> None:
    bus = connect_bus(tmp_path / "bus.sqlite")
    try:
        assert bus.mode == "owned" and bus.schema_version == 1
        assert bus.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    finally:
        close_bus(bus)
    columns = _columns(tmp_path / "bus.sqlite")
    assert tuple(columns[:7]) == CONTRACT_COLUMNS
    assert columns[7:] == ["completed_at", "recipient_epoch"]


def test_autoincrement_survives_so_no_id_is_handed_out_twice(tmp_path: Path) -> None:
    bus = connect_bus(tmp_path / "bus.sqlite")
    try:
        last = submit(bus, "a", "b", {"n": 1})
        bus.conn.execute("DELETE FROM returns WHERE id = ?", (last,))
        assert submit(bus, "a", "b", {"n": 2}) == last + 1
    finally:
        close_bus(bus)


def test_reopening_does_not_migrate_again(tmp_path: Path) -> None:
    for _ in range(2):
        bus = connect_bus(tmp_path / "bus.sqlite")
        assert bus.schema_version == 1
        close_bus(bus)


def test_compat_mode_leaves_the_foreign_file_as_it_was(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = _hand_made(tmp_path / "peer.db", rows=2)
    before = _schema_snapshot(path)
    caplog.set_level(logging.WARNING, logger="peerbus")
    bus = connect_bus(path)
    try:
        assert bus.mode == "compat" and bus.notice and "compatibility mode" in bus.notice
        submit(bus, "a", "b", {"n": 3})
    finally:
        close_bus(bus)
    assert _schema_snapshot(path) == before  # no column, index, table or journal mode added
    assert (tmp_path / "peer.db.peerbus").is_file()
    notices = [r for r in caplog.records if "compatibility mode" in r.getMessage()]
    assert len(notices) == 1


def test_compat_sidecar_path_can_be_chosen(tmp_path: Path) -> None:
    path = _hand_made(tmp_path / "peer.db")
    (tmp_path / "state").mkdir()
    close_bus(connect_bus(path, BusOptions(sidecar=tmp_path / "state" / "side.sqlite")))
    assert (tmp_path / "state" / "side.sqlite").is_file()
    assert not (tmp_path / "peer.db.peerbus").exists()


def test_compat_sidecar_in_a_missing_directory_is_a_clear_error(tmp_path: Path) -> None:
    path = _hand_made(tmp_path / "peer.db")
    with pytest.raises(BusOpenError, match="sidecar"):
        connect_bus(path, BusOptions(sidecar=tmp_path / "missing" / "side.sqlite"))


def test_adopt_migrates_a_foreign_table_in_place(tmp_path: Path) -> None:
    path = _hand_made(tmp_path / "peer.db", rows=3)
    conn = sqlite3.connect(path)
    conn.execute("DELETE FROM returns WHERE id = 3")
    conn.commit()
    conn.close()
    bus = connect_bus(path, BusOptions(adopt=True))
    try:
        assert bus.mode == "owned"
        assert submit(bus, "a", "b", {"n": 9}) == 4  # sqlite_sequence kept: 3 is not reused
        ids = [r[0] for r in bus.conn.execute("SELECT id FROM returns ORDER BY id")]
        assert ids == [1, 2, 4]
    finally:
        close_bus(bus)
    sql = sqlite3.connect(path).execute("SELECT sql FROM sqlite_master WHERE name='returns'")
    assert "AUTOINCREMENT" in sql.fetchone()[0]


def test_a_foreign_table_missing_a_contract_column_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "peer.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE returns (id INTEGER PRIMARY KEY, agent_role TEXT, status TEXT)")
    conn.close()
    with pytest.raises(ForeignSchemaError) as err:
        connect_bus(path)
    assert err.value.missing == ("recipient_role", "task_id", "payload_json", "submitted_at")


def test_a_file_from_a_newer_peerbus_is_refused(tmp_path: Path) -> None:
    close_bus(connect_bus(tmp_path / "bus.sqlite"))
    conn = sqlite3.connect(tmp_path / "bus.sqlite")
    conn.execute("PRAGMA user_version = 99")
    conn.close()
    with pytest.raises(SchemaTooNewError) as err:
        connect_bus(tmp_path / "bus.sqlite")
    assert (err.value.found, err.value.supported) == (99, 1)


def test_a_file_that_is_not_sqlite_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "bus.sqlite"
    path.write_bytes(b"this is not a database" * 100)
    with pytest.raises(BusOpenError, match="file is not a database"):
        connect_bus(path)
