"""Fixtures for the bus tests: a fake clock, and the backends the conformance suite runs on.

`backend` is the conformance suite's one seam: it opens the test's bus, whatever the
backend, and `backend_flavour` names which. The SQLite flavours: "owned" is a bus file
peerbus creates, "compat" is a `returns` table made by hand (the seven contract columns,
the original's wider table with `session_id` NOT NULL, `processed_at` and `completed_at`,
or one with extra NOT NULL columns that have defaults). "postgres" is a fresh database on
the throwaway server of tests/pgcluster.py. `flavour`, `bus_path` and `sync_bus` are the
SQLite flavours alone, for the tests of SQLite's own machinery.
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import pytest

from peerbus import BusBackend, BusOptions, open_bus
from peerbus.sqlite import BusFile, close_bus, connect_bus
from tests import pgcluster

Backend = Callable[..., AbstractAsyncContextManager[BusBackend]]

HAND_MADE_DDL = """
CREATE TABLE returns (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    agent_role TEXT,
    recipient_role TEXT,
    task_id TEXT,
    payload_json TEXT,
    status TEXT,
    submitted_at TEXT
)
"""


class FakeClock:
    """A wall clock the test moves by hand: leases and nack delays expire on `advance`."""

    def __init__(self, start: float = 1_800_000_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def make_foreign(path: Path, shape: str = "seven") -> Path:
    """A bus file as an operator (or the original mnemara) would create it by hand."""
    conn = sqlite3.connect(path)
    conn.executescript(FOREIGN_DDLS[shape])
    conn.close()
    return path


def raw_insert(path: Path, recipient: str | None, payload: str, sender: str = "a") -> int:
    """Insert a row the way a foreign writer might: any payload text, no checks."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        # A wider foreign table (the original's) also requires a session_id.
        wide = any(r[1] == "session_id" for r in conn.execute("PRAGMA table_info(returns)"))
        extra = (", session_id", ", 'raw-writer'") if wide else ("", "")
        cursor = conn.execute(
            f"""INSERT INTO returns (agent_role, recipient_role, task_id, payload_json, status,
                   submitted_at{extra[0]})
                VALUES (?, ?, NULL, ?, 'pending', '2026-01-01T00:00:00'{extra[1]})""",
            (sender, recipient, payload),
        )
        return int(cursor.lastrowid or 0)
    finally:
        conn.close()


@pytest.fixture
def insert_raw(bus_path: Path) -> Callable[..., int]:
    """`insert_raw(recipient, payload_text, sender="a")`: a row written with no checks."""

    def insert(recipient: str | None, payload: str, sender: str = "a") -> int:
        return raw_insert(bus_path, recipient, payload, sender)

    return insert


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


# The original's own wider table: rows written there stamp `datetime('now')` themselves.
ORIGINAL_WIDE_DDL = """
CREATE TABLE returns (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL,
    agent_role TEXT NOT NULL,
    task_id TEXT,
    submitted_at TEXT NOT NULL,
    payload_json TEXT NOT NULL,
    status TEXT NOT NULL DEFAULT 'pending',
    processed_at TEXT,
    completed_at TEXT,
    recipient_role TEXT
);
CREATE INDEX idx_returns_status ON returns(status);
CREATE INDEX idx_returns_recipient ON returns(recipient_role);
"""

# Extra NOT NULL columns with DEFAULTs, and a `datetime('now')` default for submitted_at.
DEFAULTS_DDL = """
CREATE TABLE returns (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    agent_role TEXT,
    recipient_role TEXT,
    task_id TEXT,
    payload_json TEXT,
    status TEXT NOT NULL DEFAULT 'pending',
    submitted_at TEXT NOT NULL DEFAULT (datetime('now')),
    session_id TEXT NOT NULL DEFAULT 'anonymous',
    priority INTEGER NOT NULL DEFAULT 0,
    created_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP
)
"""

FOREIGN_DDLS = {"seven": HAND_MADE_DDL, "wide": ORIGINAL_WIDE_DDL, "defaults": DEFAULTS_DDL}


class Flavour(str):
    """A flavour name that also carries the foreign table's shape. It equals its mode
    ("owned" / "compat"), so the tests' `flavour == "compat"` checks cover every shape."""

    shape: str

    def __new__(cls, mode: str, shape: str = "seven") -> Flavour:
        made = super().__new__(cls, mode)
        made.shape = shape
        return made


SQLITE_FLAVOURS = [
    pytest.param(Flavour("owned"), id="owned"),
    pytest.param(Flavour("compat"), id="compat"),
    pytest.param(Flavour("compat", "wide"), id="compat-wide"),
    pytest.param(Flavour("compat", "defaults"), id="compat-defaults"),
]


@pytest.fixture(params=SQLITE_FLAVOURS)
def flavour(request: pytest.FixtureRequest) -> str:
    return request.param  # type: ignore[no-any-return]


@pytest.fixture(params=[*SQLITE_FLAVOURS, pytest.param(Flavour("postgres"), id="postgres")])
def backend_flavour(request: pytest.FixtureRequest) -> str:
    return request.param  # type: ignore[no-any-return]


def sqlite_bus_path(tmp_path: Path, flavour: str) -> Path:
    path = tmp_path / "bus.sqlite"
    if flavour == "compat":
        make_foreign(path, getattr(flavour, "shape", "seven"))
    return path


@pytest.fixture
def bus_path(tmp_path: Path, flavour: str) -> Path:
    return sqlite_bus_path(tmp_path, flavour)


@pytest.fixture
def bus_location(tmp_path: Path, backend_flavour: str, request: pytest.FixtureRequest) -> str:
    """Where this test's bus is: a SQLite path, or the URL of a fresh PostgreSQL database
    (the server starts only for the tests that ask for it)."""
    if backend_flavour == "postgres":
        return str(request.getfixturevalue("pg_url"))
    return str(sqlite_bus_path(tmp_path, backend_flavour))


@pytest.fixture
def backend(bus_location: str, options: Callable[..., BusOptions]) -> Backend:
    """`async with backend(**option_overrides) as bus`: this test's bus, opened. Call it
    again to open the same bus anew (a restart) or a second time (another process's view)."""

    def open_it(**overrides: Any) -> AbstractAsyncContextManager[BusBackend]:
        if "silent_types" in overrides:
            overrides["silent_types"] = frozenset(overrides["silent_types"])
        return open_bus(bus_location, options=options(**overrides))

    return open_it


@pytest.fixture
def insert_foreign(bus_location: str, backend_flavour: str) -> Callable[..., int]:
    """`insert_foreign(recipient, payload_text, sender="a")`: a row a foreign writer put in
    this test's bus, with no checks, whatever the backend."""

    def insert(recipient: str | None, payload: str, sender: str = "a") -> int:
        if backend_flavour == "postgres":
            return pgcluster.raw_insert(bus_location, recipient, payload, sender)
        return raw_insert(Path(bus_location), recipient, payload, sender)

    return insert


@pytest.fixture
def options(clock: FakeClock) -> Callable[..., BusOptions]:
    """BusOptions with the fake clock; durable=False keeps the suite fast on slow disks."""

    def build(**overrides: Any) -> BusOptions:
        base: dict[str, Any] = {"clock": clock, "durable": False}
        base.update(overrides)
        return BusOptions(**base)

    return build


@pytest.fixture
def sync_bus(bus_path: Path, options: Callable[..., BusOptions]) -> Iterator[BusFile]:
    bus = connect_bus(bus_path, options())
    try:
        yield bus
    finally:
        close_bus(bus)


def in_another_process(bus_path: Path, code: str) -> None:
    """Run `code` with `bus` open on `bus_path` in a fresh interpreter."""
    script = (
        "import sys\nfrom pathlib import Path\n"
        "from peerbus import *\nfrom peerbus.sqlite import *\n"
        "bus = connect_bus(Path(sys.argv[1]), BusOptions(durable=False))\n"
        f"{code}\nclose_bus(bus)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(bus_path)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert done.returncode == 0, done.stderr
