"""Compatibility mode on a hand-made table: what an ack writes, and healing after a crash."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

import peerbus.sqlite as pb
from peerbus.sqlite import BusFile

pytestmark = pytest.mark.parametrize("flavour", ["compat"])


def _rows(path: Path) -> list[tuple[object, ...]]:
    conn = sqlite3.connect(path)
    try:
        return conn.execute("SELECT * FROM returns ORDER BY id").fetchall()
    finally:
        conn.close()


def test_an_ack_writes_only_the_status_column(sync_bus: BusFile, bus_path: Path) -> None:
    direct = pb.submit(sync_bus, "a", "b", {"n": 1})
    broadcast = pb.submit(sync_bus, "a", None, {"n": 2})
    before = _rows(bus_path)
    pb.ack(sync_bus, pb.claim_batch(sync_bus, "b"))
    after = _rows(bus_path)
    status = 5  # the column index of `status` in the contract order
    for old, new in zip(before, after, strict=True):
        assert old[:status] + old[status + 1 :] == new[:status] + new[status + 1 :]
    assert [(r[0], r[status]) for r in after] == [(direct, "done"), (broadcast, "pending")]


def test_a_crash_between_the_sidecar_and_the_foreign_write_is_healed(
    sync_bus: BusFile, bus_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ident = pb.submit(sync_bus, "a", "b", {"n": 1})
    claim = pb.claim_batch(sync_bus, "b")
    monkeypatch.setattr("peerbus.sqlite.settle.flush_status", lambda bus: 0)  # "killed" here
    assert pb.ack(sync_bus, claim).settled == (ident,)
    assert [r[5] for r in _rows(bus_path)] == ["pending"]
    monkeypatch.undo()
    assert pb.claim_batch(sync_bus, "b").messages == ()  # nothing redelivered, and ...
    assert [r[5] for r in _rows(bus_path)] == ["done"]  # ... the foreign status caught up
    outbox = sync_bus.conn.execute("SELECT count(*) FROM side.peerbus_status_outbox")
    assert outbox.fetchone()[0] == 0


def test_dead_letters_stay_in_the_sidecar(sync_bus: BusFile, bus_path: Path) -> None:
    conn = sqlite3.connect(bus_path)
    conn.execute(
        "INSERT INTO returns (agent_role, recipient_role, payload_json, status, submitted_at)"
        " VALUES ('a', 'b', 'not json', 'pending', 't')"
    )
    conn.commit()
    conn.close()
    before = _rows(bus_path)
    assert pb.claim_batch(sync_bus, "b").failed == 1
    assert _rows(bus_path) == before
    assert [d.recipient for d in pb.dead_letters(sync_bus)] == ["b"]
