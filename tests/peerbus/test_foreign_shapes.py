"""Foreign `returns` tables wider than the contract: what we fill, what we refuse, stamps in
the table's own format, acks that set `completed_at`, and `bus send` on the original's table."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

from panels.cli.bus import bus_app
from peerbus import BusOpenError, BusOptions
from peerbus.sqlite import BusFile, ack, claim_batch, close_bus, connect_bus, history, submit
from peerbus.sqlite.shape import (
    ISO,
    SQLITE,
    StampStyle,
    read_shape,
    require_writable,
    stamp_style,
)
from tests.peerbus.conftest import DEFAULTS_DDL, ORIGINAL_WIDE_DDL, make_foreign

SQLITE_STAMP = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d")
NOW = 1_800_000_000.25


def _original_row(path: Path, *, recipient: str | None = "b", status: str = "pending") -> int:
    """A row as the original's writers put it: a session, and `datetime('now')`."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        cursor = conn.execute(
            """INSERT INTO returns (session_id, agent_role, task_id, submitted_at, payload_json,
                   status, recipient_role)
               VALUES ('their-session', 'theseus', 't', datetime('now'), '{"n": 0}', ?, ?)""",
            (status, recipient),
        )
        return int(cursor.lastrowid or 0)
    finally:
        conn.close()


def _row(path: Path, ident: int) -> dict[str, object]:
    conn = sqlite3.connect(path)
    conn.row_factory = sqlite3.Row
    try:
        return dict(conn.execute("SELECT * FROM returns WHERE id = ?", (ident,)).fetchone())
    finally:
        conn.close()


def test_the_original_wide_table_needs_a_session_and_has_done_stamps(tmp_path: Path) -> None:
    conn = sqlite3.connect(make_foreign(tmp_path / "bus.sqlite", "wide"))
    shape = read_shape(conn)
    assert shape.fills == ("session_id",)
    assert shape.has_completed_at and shape.has_processed_at and shape.refusal() is None
    assert stamp_style(conn, own=None) == SQLITE  # empty: the original's format


def test_the_stamp_format_is_the_one_the_table_uses(tmp_path: Path) -> None:
    path = make_foreign(tmp_path / "bus.sqlite", "wide")
    _original_row(path)
    assert stamp_style(sqlite3.connect(path), own=None) == SQLITE
    conn = sqlite3.connect(make_foreign(tmp_path / "d.sqlite", "defaults"))
    assert read_shape(conn).fills == () and stamp_style(conn, own=None) == SQLITE
    assert "datetime('now')" in DEFAULTS_DDL


@pytest.mark.parametrize(
    ("stamps", "style"),
    [
        (["2026-01-01T10:00:00.000+00:00"], ISO),
        (["2026-01-01 10:00:00"], SQLITE),
        (["2026-01-01T10:00:00Z"], StampStyle(fraction=0, zone="Z")),
        (["2026-01-01 10:00:00.123456"], StampStyle(sep=" ", fraction=6, zone="")),
        ([1_767_261_600], StampStyle(kind="unix", fraction=0)),
    ],
)
def test_submit_writes_stamps_in_the_tables_format(
    tmp_path: Path, stamps: list[object], style: StampStyle
) -> None:
    path = make_foreign(tmp_path / "bus.sqlite")
    conn = sqlite3.connect(path, isolation_level=None)
    for stamp in stamps:
        conn.execute(
            "INSERT INTO returns (agent_role, payload_json, status, submitted_at)"
            " VALUES ('x', '{}', 'done', ?)",
            (stamp,),
        )
    conn.close()
    bus = connect_bus(path, BusOptions(clock=lambda: NOW))
    try:
        assert stamp_style(bus.conn) == style
        ident = submit(bus, "a", "b", {"n": 1})
    finally:
        close_bus(bus)
    written = _row(path, ident)["submitted_at"]
    # A TEXT column's affinity stores a unix number as its text.
    assert str(written) == str(style.format(NOW))


def test_submit_fills_session_id_and_stamps_on_the_original_table(tmp_path: Path) -> None:
    path = make_foreign(tmp_path / "bus.sqlite", "wide")
    theirs = _original_row(path, recipient="other")
    bus = connect_bus(path)
    try:
        ours = submit(bus, "a", "b", {"n": 1})
        broadcast = submit(bus, "a", None, {"n": 2})
        session = f"peerbus-{bus.identity[:12]}"
    finally:
        close_bus(bus)
    for ident in (ours, broadcast):
        row = _row(path, ident)
        assert row["session_id"] == session
        assert isinstance(row["submitted_at"], str)
        assert SQLITE_STAMP.fullmatch(row["submitted_at"])  # as the original's own rows
        assert row["processed_at"] is None and row["completed_at"] is None
        assert row["status"] == "pending"
    assert _row(path, theirs)["session_id"] == "their-session"


def test_an_extra_stamp_column_is_filled_but_never_a_done_stamp(tmp_path: Path) -> None:
    path = tmp_path / "bus.sqlite"
    conn = sqlite3.connect(path)
    conn.executescript(
        DEFAULTS_DDL.replace("priority INTEGER NOT NULL DEFAULT 0", "queued_at TEXT NOT NULL")
    )
    conn.close()
    bus = connect_bus(path)
    try:
        ident = submit(bus, "a", "b", {})
    finally:
        close_bus(bus)
    row = _row(path, ident)
    assert row["queued_at"] == row["submitted_at"]
    assert row["session_id"] == "anonymous"  # its default: we only fill what is required


@pytest.mark.parametrize(
    ("column", "words"),
    [
        ("owner TEXT NOT NULL", "no honest value"),
        ("completed_at TEXT NOT NULL", "finished before anyone read it"),
        ("recipient_role TEXT NOT NULL", "for a broadcast"),
    ],
)
def test_a_table_we_cannot_fill_is_refused_naming_the_column(
    tmp_path: Path, column: str, words: str
) -> None:
    path = tmp_path / "bus.sqlite"
    name = column.split()[0]
    ddl = ORIGINAL_WIDE_DDL.replace("recipient_role TEXT\n", "recipient_role TEXT,\n    x TEXT\n")
    if name == "owner":
        ddl = ddl.replace("x TEXT", column)
    else:
        ddl = ddl.replace(f"{name} TEXT,", f"{column},").replace(f"{name} TEXT\n", f"{column}\n")
    conn = sqlite3.connect(path)
    conn.executescript(ddl)
    conn.close()
    shape = read_shape(sqlite3.connect(path))
    with pytest.raises(BusOpenError, match=f"`{name}`.*{words}") as refused:
        require_writable(shape, path)
    assert str(path) in str(refused.value) and "\n" not in str(refused.value)
    # Refused at open, before any sidecar is made: never at the first send.
    with pytest.raises(BusOpenError, match=f"`{name}`"):
        connect_bus(path)
    assert not path.with_name(path.name + ".peerbus").exists()
    assert sqlite3.connect(path).execute("SELECT count(*) FROM returns").fetchone()[0] == 0


def _claim_ack(bus: BusFile, recipient: str) -> tuple[int, ...]:
    claim = claim_batch(bus, recipient)
    ack(bus, claim)
    return claim.ids


def test_an_ack_sets_completed_and_processed_at_in_the_tables_format(tmp_path: Path) -> None:
    path = make_foreign(tmp_path / "bus.sqlite", "wide")
    theirs = _original_row(path)
    bus = connect_bus(path)
    try:
        ours = submit(bus, "a", "b", {"n": 1})
        assert _claim_ack(bus, "b") == (theirs, ours)
        records = {r.id: r for r in history(bus)}
    finally:
        close_bus(bus)
    for ident in (theirs, ours):
        row = _row(path, ident)
        assert row["status"] == "done"
        assert isinstance(row["completed_at"], str)
        assert SQLITE_STAMP.fullmatch(row["completed_at"])
        assert row["processed_at"] == row["completed_at"]
        assert records[ident].completed_at == row["completed_at"]


def test_history_shows_the_originals_completed_at(tmp_path: Path) -> None:
    path = make_foreign(tmp_path / "bus.sqlite", "wide")
    done = _original_row(path, status="done")
    stamped = _original_row(path)
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("UPDATE returns SET completed_at = '2026-01-01 10:00:00' WHERE id = ?", (done,))
    conn.execute("UPDATE returns SET completed_at = '2026-01-01 10:00:01' WHERE id = ?", (stamped,))
    conn.close()
    bus = connect_bus(path)
    try:
        records = {r.id: r for r in history(bus)}
    finally:
        close_bus(bus)
    assert (records[done].status, records[done].completed_at) == ("done", "2026-01-01 10:00:00")
    assert (records[stamped].status, records[stamped].completed_at) == (
        "done",
        "2026-01-01 10:00:01",
    )


def test_an_ack_on_the_seven_column_table_writes_only_status(tmp_path: Path) -> None:
    path = make_foreign(tmp_path / "bus.sqlite")
    bus = connect_bus(path)
    try:
        ident = submit(bus, "a", "b", {})
        _claim_ack(bus, "b")
    finally:
        close_bus(bus)
    assert _row(path, ident)["status"] == "done"
    assert set(_row(path, ident)) == {
        "id",
        "agent_role",
        "recipient_role",
        "task_id",
        "payload_json",
        "status",
        "submitted_at",
    }


runner = CliRunner()


def test_bus_send_works_on_the_originals_wide_table(tmp_path: Path) -> None:
    path = make_foreign(tmp_path / "bus.sqlite", "wide")
    _original_row(path)
    result = runner.invoke(bus_app, ["send", "--db", str(path), "--to", "b", '{"text": "hi"}'])
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert result.exit_code == 0 and result.stdout.strip() == "sent message 2"
    row = _row(path, 2)
    assert str(row["session_id"]).startswith("peerbus-") and row["agent_role"] == "operator"


def test_bus_send_on_a_table_we_cannot_fill_prints_one_line(tmp_path: Path) -> None:
    path = tmp_path / "bus.sqlite"
    conn = sqlite3.connect(path)
    conn.executescript(
        ORIGINAL_WIDE_DDL.replace("task_id TEXT,", "task_id TEXT, owner INT NOT NULL,")
    )
    conn.close()
    result = runner.invoke(bus_app, ["send", "--db", str(path), "--to", "b", "{}"])
    assert isinstance(result.exception, SystemExit) and result.exit_code != 0
    lines = [line for line in result.stderr.splitlines() if "`owner`" in line]
    assert len(lines) == 1 and "Traceback" not in result.stderr
    assert "IntegrityError" not in result.stderr
