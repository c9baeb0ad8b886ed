"""Schema, migrations and compatibility mode: what a bus file looks like on disk."""

from __future__ import annotations

import logging
import sqlite3
import uuid
from pathlib import Path

import pytest

from peerbus import BusOpenError, BusOptions, ForeignSchemaError, SchemaTooNewError, open_bus
from peerbus.sqlite import bus_identity, claim_batch, close_bus, connect_bus, inbox, submit
from peerbus.sqlite.busfile import sidecar_path
from peerbus.sqlite.schema import (
    CONTRACT_COLUMNS,
    CONTRACT_DDL,
    OWNED_MIGRATIONS,
    SIDECAR_MIGRATIONS,
    ensure_bus_id,
)
from tests.peerbus.conftest import make_foreign

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
        assert bus.mode == "owned" and bus.schema_version == 2
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
        assert bus.schema_version == 2
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
    # No column, index, table or journal mode added: only the inert trigger that marks
    # which table this is (sidecar_identity.py), which goes with the table if it is dropped.
    after = _schema_snapshot(path)
    objects = after[0]
    assert isinstance(objects, list)
    marks = [o for o in objects if o[0] == "trigger"]
    assert len(marks) == 1 and marks[0][1].startswith("peerbus_mark_") and "WHEN 0" in marks[0][2]
    assert ([o for o in objects if o[0] != "trigger"], *after[1:]) == before
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
    assert (err.value.found, err.value.supported) == (99, 2)


def test_a_file_that_is_not_sqlite_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "bus.sqlite"
    path.write_bytes(b"this is not a database" * 100)
    with pytest.raises(BusOpenError, match="file is not a database"):
        connect_bus(path)


def _version_1(path: Path, flavour: str) -> Path:
    """A bus file as the previous peerbus (schema v1) left it, with one message that was
    claimed three times (v1 counted every claim as an attempt) and given back."""
    if flavour == "compat":
        conn = sqlite3.connect(make_foreign(path), isolation_level=None)
        conn.execute("ATTACH DATABASE ? AS side", (str(sidecar_path(path, BusOptions())),))
        statements, schema = SIDECAR_MIGRATIONS[0], "side"
    else:
        conn = sqlite3.connect(path, isolation_level=None)
        conn.execute(CONTRACT_DDL)
        statements, schema = OWNED_MIGRATIONS[0], "main"
    for statement in statements:
        conn.execute(statement)
    conn.execute(f"PRAGMA {schema}.user_version = 1")
    conn.execute(
        "INSERT INTO main.returns (agent_role, recipient_role, payload_json, status,"
        " submitted_at) VALUES ('a', 'b', '{\"n\": 1}', 'pending', 't')"
    )
    conn.execute(
        f"""INSERT INTO {schema}.peerbus_receipts (message_id, recipient, state, attempts)
            VALUES (1, 'b', 'waiting', 3)"""
    )
    conn.close()
    return path


def test_a_version_1_bus_migrates_in_place(bus_path: Path, flavour: str) -> None:
    bus_path.unlink(missing_ok=True)
    bus = connect_bus(_version_1(bus_path, flavour))
    try:
        latest = len(SIDECAR_MIGRATIONS if flavour == "compat" else OWNED_MIGRATIONS)
        assert (bus.mode, bus.schema_version) == (flavour, latest)
        assert (len(OWNED_MIGRATIONS), len(SIDECAR_MIGRATIONS)) == (2, 3)
        [pending] = inbox(bus, "b")
        # v1's claim count becomes the delivery count, and stays as an upper bound of the
        # failures, so no message gets more turns than v1 would have given it.
        assert (pending.attempts, pending.deliveries) == (3, 3)
        assert uuid.UUID(hex=bus.identity).version == 4
        assert submit(bus, "a", "b", {"n": 2}, key="k") == submit(bus, "a", "b", {}, key="k") == 2
        claim = claim_batch(bus, "b")
        assert claim.ids == (1,) and claim.messages[0].attempt == 4  # isolated: 3 >= 2
    finally:
        close_bus(bus)
    again = connect_bus(bus_path)
    try:
        assert again.schema_version == latest and again.identity == bus.identity
    finally:
        close_bus(again)


def _remake(bus_path: Path, flavour: str) -> None:
    """Delete the bus file (and its sidecar) and make it again."""
    for path in bus_path.parent.glob(bus_path.name + "*"):
        path.unlink()
    if flavour == "compat":
        make_foreign(bus_path)


@pytest.mark.anyio
async def test_the_bus_identity_is_stable_and_a_new_file_gets_a_new_one(
    bus_path: Path, flavour: str
) -> None:
    first = connect_bus(bus_path)
    try:
        ident = bus_identity(first)
    finally:
        close_bus(first)
    assert uuid.UUID(hex=ident).version == 4 and uuid.UUID(hex=ident).hex == ident
    async with open_bus(bus_path) as bus:
        assert bus.identity == ident
    _remake(bus_path, flavour)
    async with open_bus(bus_path) as remade:
        assert remade.identity != ident and len(remade.identity) == 32


def test_a_bus_that_lost_its_identity_gets_one_on_open(bus_path: Path, flavour: str) -> None:
    close_bus(connect_bus(bus_path))
    state = sidecar_path(bus_path, BusOptions()) if flavour == "compat" else bus_path
    raw = sqlite3.connect(state, isolation_level=None)
    try:
        raw.execute("DELETE FROM peerbus_meta WHERE key = 'bus_id'")
        bus = connect_bus(bus_path)
        close_bus(bus)
        stored = raw.execute("SELECT value FROM peerbus_meta WHERE key = 'bus_id'").fetchone()
        assert stored == (bus.identity,)
    finally:
        raw.close()
    again = connect_bus(bus_path)
    close_bus(again)
    assert again.identity == bus.identity


def test_making_the_identity_keeps_one_another_process_made_first(tmp_path: Path) -> None:
    bus = connect_bus(tmp_path / "bus.sqlite")
    close_bus(bus)
    # The loser of a race: it found no id, then took the write lock after the winner.
    late = sqlite3.connect(tmp_path / "bus.sqlite", isolation_level=None)
    try:
        late.execute("BEGIN IMMEDIATE")
        assert ensure_bus_id(late, "main") == bus.identity
        late.execute("COMMIT")
    finally:
        late.close()
