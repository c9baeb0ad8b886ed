"""Schema v4: the status row's window, budget and inbox figures; v5: whether the panel's tools
run in the sandbox. Older files upgrade in place, and a file an older host wrote still reads
(the missing figures at their defaults)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from panels.hostdb import SCHEMA_VERSION, PanelRow, connect, read_panels, upsert_panels
from panels.hostdb import schema as hostdb_schema
from panels.hostdb.status import TOOLS_UNCONFINED


def version_3_file(path: Path, version: int = 3) -> None:
    """A host.sqlite as schema version 3 (or `version`) left it, with one panel row."""
    raw = sqlite3.connect(path)
    for step in range(1, version + 1):
        for statement in hostdb_schema.MIGRATION_STEPS[step]:
            raw.execute(statement)
    raw.execute(
        "INSERT INTO panels (name, kind, state, turns, usd, updated_ts, dead_letters) "
        "VALUES ('a', 'worker', 'idle', 4, 0.25, 1, 2)"
    )
    raw.execute(f"PRAGMA user_version = {version}")
    raw.commit()
    raw.close()


def test_a_version_3_file_upgrades_and_keeps_its_rows(tmp_path: Path) -> None:
    path = tmp_path / "host.sqlite"
    version_3_file(path)
    conn = connect(path)
    try:
        assert int(conn.execute("PRAGMA user_version").fetchone()[0]) == SCHEMA_VERSION == 6
        (row,) = read_panels(conn)
        assert (row.name, row.turns, row.usd, row.dead_letters) == ("a", 4, 0.25, 2)
        assert (row.window_tokens, row.token_cap, row.budget_usd, row.waiting) == (0, 0, 0.0, 0)
        upsert_panels(conn, [PanelRow("a", "worker", "idle", window_tokens=12_345,
                                      token_cap=200_000, budget_usd=2.0, waiting=3)])  # fmt: skip
        (row,) = read_panels(conn)
        assert (row.window_tokens, row.token_cap, row.budget_usd, row.waiting) == (
            12_345, 200_000, 2.0, 3)  # fmt: skip
    finally:
        conn.close()


def test_an_older_file_reads_without_being_migrated(tmp_path: Path) -> None:
    path = tmp_path / "host.sqlite"
    version_3_file(path)
    # As a read-only viewer opens it: nothing may be written, so nothing is migrated.
    conn = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)
    try:
        (row,) = read_panels(conn)
        assert (row.name, row.dead_letters, row.waiting) == ("a", 2, 0)
        assert int(conn.execute("PRAGMA user_version").fetchone()[0]) == 3
    finally:
        conn.close()


def test_a_version_4_file_learns_the_sandbox_column(tmp_path: Path) -> None:
    path = tmp_path / "host.sqlite"
    version_3_file(path, version=4)
    readonly = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)
    try:
        (row,) = read_panels(readonly)  # an older file, read as it is: not known
        assert row.sandbox == ""
    finally:
        readonly.close()
    conn = connect(path)
    try:
        (row,) = read_panels(conn)
        assert (row.name, row.turns, row.sandbox) == ("a", 4, "")
        upsert_panels(conn, [PanelRow("a", "worker", "idle", sandbox=TOOLS_UNCONFINED)])
        (row,) = read_panels(conn)
        assert row.sandbox == TOOLS_UNCONFINED
    finally:
        conn.close()
