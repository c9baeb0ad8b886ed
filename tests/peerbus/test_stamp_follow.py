"""Stamps on a shared table: the original's `YYYY-MM-DD HH:MM:SS` on an empty table, then
the format of the other writers' rows, never our own rows counted as evidence (issue 30)."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import pytest

import peerbus as pb
import peerbus.sqlite as sq
from tests.peerbus.conftest import make_foreign

SQLITE_STAMP = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d")
NOW = 1_800_000_000.0


def _stamp(path: Path, ident: int) -> str:
    conn = sqlite3.connect(path)
    try:
        row = conn.execute("SELECT submitted_at FROM returns WHERE id = ?", (ident,)).fetchone()
        return str(row[0])
    finally:
        conn.close()


def _send(path: Path, n: int) -> int:
    bus = sq.connect_bus(path, pb.BusOptions(durable=False, clock=lambda: NOW))
    try:
        return sq.submit(bus, "a", "b", {"n": n})
    finally:
        sq.close_bus(bus)


@pytest.mark.parametrize("shape", ["seven", "wide"])
def test_an_empty_shared_table_gets_the_originals_stamps_and_keeps_them(
    tmp_path: Path, shape: str
) -> None:
    path = make_foreign(tmp_path / "returns.db", shape)
    # Three sends, each by a host that opened the table anew: our own rows never decide.
    for n in range(3):
        assert SQLITE_STAMP.fullmatch(_stamp(path, _send(path, n)))


def test_stamps_follow_the_rows_of_other_writers(tmp_path: Path) -> None:
    path = make_foreign(tmp_path / "returns.db")
    bus = sq.connect_bus(path, pb.BusOptions(durable=False, clock=lambda: NOW))
    try:
        ours = [sq.submit(bus, "a", "b", {"n": n}) for n in range(5)]
        # Another writer, while we run, stamps ISO with a `T`: our next row follows it,
        # though our own five rows are the newest majority.
        conn = sqlite3.connect(path, isolation_level=None)
        conn.execute(
            "INSERT INTO returns (agent_role, payload_json, status, submitted_at)"
            " VALUES ('x', '{}', 'pending', '2026-01-01T10:00:00Z')"
        )
        conn.close()
        after = sq.submit(bus, "a", "b", {"n": 9})
    finally:
        sq.close_bus(bus)
    assert all(SQLITE_STAMP.fullmatch(_stamp(path, i)) for i in ours)
    assert _stamp(path, after) == "2027-01-15T08:00:00Z"
