"""`prune` on a foreign table reads every stamp format it meets, prefers `completed_at`, and
never deletes a row newer than the cutoff or one whose stamp it cannot read."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

from panels.cli.bus import bus_app
from peerbus import BusOptions
from peerbus.sqlite import close_bus, connect_bus, prune
from peerbus.sqlite.shape import parse_stamp
from tests.peerbus.conftest import make_foreign

NOW = 1_800_000_000.0  # 2027-01-15T08:00:00Z
HOUR = 3600.0


def _rows(path: Path, stamps: list[tuple[object, object]], *, wide: bool = False) -> list[int]:
    """`done` rows with (submitted_at, completed_at) as given, then one pending row (prune
    always keeps the newest row)."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        ids: list[int] = []
        for submitted, completed in [*stamps, ("2000-01-01", None)]:
            status = "pending" if len(ids) == len(stamps) else "done"
            columns, values = "agent_role, payload_json, status, submitted_at", "?, '{}', ?, ?"
            params: list[object] = ["x", status, submitted]
            if wide:
                columns += ", session_id, completed_at"
                values += ", 's', ?"
                params.append(completed)
            cursor = conn.execute(f"INSERT INTO returns ({columns}) VALUES ({values})", params)
            ids.append(int(cursor.lastrowid or 0))
        return ids[:-1]
    finally:
        conn.close()


def _left(path: Path) -> set[int]:
    conn = sqlite3.connect(path)
    try:
        return {int(r[0]) for r in conn.execute("SELECT id FROM returns WHERE status = 'done'")}
    finally:
        conn.close()


def _prune(path: Path, older_than: float, now: float = NOW) -> int:
    bus = connect_bus(path, BusOptions(clock=lambda: now, durable=False))
    try:
        return prune(bus, older_than=older_than)
    finally:
        close_bus(bus)


# Each format twice: 2 hours old (pruned with --older-than 1h) and 10 minutes old (kept).
FORMATS = {
    "iso-T-millis-offset": ("2027-01-15T06:00:00.000+00:00", "2027-01-15T07:50:00.000+00:00"),
    "iso-T-plain": ("2027-01-15T06:00:00", "2027-01-15T07:50:00"),
    "iso-T-Z": ("2027-01-15T06:00:00Z", "2027-01-15T07:50:00Z"),
    "iso-T-micros-Z": ("2027-01-15T06:00:00.123456Z", "2027-01-15T07:50:00.5Z"),
    "iso-T-other-zone": ("2027-01-15T08:00:00+02:00", "2027-01-15T09:50:00+02:00"),
    "iso-T-negative-zone": ("2027-01-15T01:00:00-0500", "2027-01-15T02:50:00-05:00"),
    "sqlite-space": ("2027-01-15 06:00:00", "2027-01-15 07:50:00"),
    "sqlite-space-fraction": ("2027-01-15 06:00:00.250", "2027-01-15 07:50:00.250"),
    "space-with-zone": ("2027-01-15 06:00:00+00:00", "2027-01-15 07:50:00 +00:00"),
    "minutes-only": ("2027-01-15 06:00", "2027-01-15 07:50"),
    "unix-seconds": (int(NOW - 2 * HOUR), int(NOW - 600)),
    "unix-float": (NOW - 2 * HOUR + 0.5, NOW - 600.5),
    "unix-millis": (int((NOW - 2 * HOUR) * 1000), int((NOW - 600) * 1000)),
    "unix-text": (str(int(NOW - 2 * HOUR)), f"{NOW - 600:.3f}"),
}


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_each_format_is_pruned_by_its_time(tmp_path: Path, fmt: str) -> None:
    path = make_foreign(tmp_path / "bus.sqlite")
    old_stamp, recent_stamp = FORMATS[fmt]
    old, recent = _rows(path, [(old_stamp, None), (recent_stamp, None)])
    assert _prune(path, HOUR) == 1
    assert _left(path) == {recent}
    assert old not in _left(path)


def test_a_datetime_now_row_seconds_old_survives_an_hour_prune(tmp_path: Path) -> None:
    """The issue's case: `datetime('now')` writes a space, and text comparison with an ISO
    cutoff took a row a few seconds old for older than the hour."""
    path = make_foreign(tmp_path / "bus.sqlite", "wide")
    conn = sqlite3.connect(path, isolation_level=None)
    for age in ("-3 seconds", "-2 hours"):
        conn.execute(
            """INSERT INTO returns (session_id, agent_role, submitted_at, payload_json, status)
               VALUES ('s', 'x', datetime('now', ?), '{}', 'done')""",
            (age,),
        )
    conn.execute(
        """INSERT INTO returns (session_id, agent_role, submitted_at, payload_json)
           VALUES ('s', 'x', datetime('now'), '{}')"""
    )
    conn.close()
    result = CliRunner().invoke(bus_app, ["prune", "--db", str(path), "--older-than", "1h"])
    assert result.exit_code == 0 and result.stdout.strip() == "deleted 1 done row(s)"
    assert _left(path) == {1}


def test_completed_at_is_preferred_to_submitted_at(tmp_path: Path) -> None:
    path = make_foreign(tmp_path / "bus.sqlite", "wide")
    finished_late, finished_early, never_stamped = _rows(
        path,
        [
            ("2027-01-13 08:00:00", "2027-01-15 07:59:00"),  # sent 2 days ago, done a minute ago
            ("2027-01-15 07:30:00", "2027-01-15 06:00:00"),  # done before it says it was sent
            ("2027-01-15 05:00:00", None),  # no completed_at: its submitted_at counts
        ],
        wide=True,
    )
    assert _prune(path, HOUR) == 2
    assert _left(path) == {finished_late}
    assert {finished_early, never_stamped}.isdisjoint(_left(path))


@pytest.mark.parametrize("stamp", ["yesterday", "", "2027-13-45 99:00:00", None, "15/01/2027"])
def test_a_row_whose_time_cannot_be_read_is_kept(tmp_path: Path, stamp: object) -> None:
    path = make_foreign(tmp_path / "bus.sqlite")
    [unreadable] = _rows(path, [(stamp, None)])
    assert _prune(path, 0, now=NOW + 100 * 365 * 86400) == 0
    assert _left(path) == {unreadable}


def test_a_row_exactly_at_the_cutoff_second_is_kept() -> None:
    # A stamp to the second covers that whole second: 06:00:00 may be 06:00:00.9.
    stamp = parse_stamp("2027-01-15 06:00:00")
    assert stamp is not None and stamp > NOW - 2 * HOUR
    day = parse_stamp("2027-01-15")
    assert day is not None and day == NOW - 8 * HOUR + 86400  # a date lasts all day


def test_prune_works_in_chunks_past_unreadable_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("peerbus.sqlite.maintenance.CHUNK", 3)
    path = make_foreign(tmp_path / "bus.sqlite")
    junk: tuple[object, object] = ("junk", None)
    day_old: tuple[object, object] = ("2027-01-14", None)
    stamps = [junk] * 4 + [day_old] * 5
    ids = _rows(path, stamps)
    assert _prune(path, HOUR) == 5
    assert _left(path) == set(ids[:4])
