"""Fixtures for the bus tests: a fake clock, and the bus flavours the conformance suite runs.

`flavour` is the conformance suite's one seam: "owned" is a bus file peerbus creates,
"compat" is a `returns` table made by hand with only the seven contract columns. A second
backend joins the suite by adding a param here.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from peerbus import BusFile, BusOptions, close_bus, connect_bus

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


def make_foreign(path: Path) -> Path:
    """A bus file as an operator (or the original mnemara) would create it by hand."""
    conn = sqlite3.connect(path)
    conn.executescript(HAND_MADE_DDL)
    conn.close()
    return path


def raw_insert(path: Path, recipient: str | None, payload: str, sender: str = "a") -> int:
    """Insert a row the way a foreign writer might: any payload text, no checks."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        cursor = conn.execute(
            """INSERT INTO returns (agent_role, recipient_role, task_id, payload_json, status,
                   submitted_at) VALUES (?, ?, NULL, ?, 'pending', '2026-01-01T00:00:00')""",
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


@pytest.fixture(params=["owned", "compat"])
def flavour(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def bus_path(tmp_path: Path, flavour: str) -> Path:
    path = tmp_path / "bus.sqlite"
    if flavour == "compat":
        make_foreign(path)
    return path


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
