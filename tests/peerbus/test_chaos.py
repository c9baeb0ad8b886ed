"""Chaos: the consumer is killed with SIGKILL mid-batch again and again, and producers race.

Part of the conformance suite (it runs on every flavour). The consumer script commits the
ids it processed to its own store before acking, like the host; the invariants are the
bus's promises: every message processed at least once, nothing acked that was not
processed, no id lost or handed out twice, and both files intact.
"""

from __future__ import annotations

import json
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from peerbus import BusOptions, Outgoing, close_bus, connect_bus, submit_many

HERE = Path(__file__).parent
pytestmark = pytest.mark.slow


def _integrity(path: Path) -> str:
    conn = sqlite3.connect(path)
    try:
        return str(conn.execute("PRAGMA integrity_check").fetchone()[0])
    finally:
        conn.close()


def _spawn(*args: object) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, *map(str, args)], stdout=subprocess.PIPE, text=True)


def _add(bus_path: Path, count: int, start: int) -> list[int]:
    bus = connect_bus(bus_path, BusOptions(lock_deadline=30))
    try:
        batch = [Outgoing("worker", {"type": "work", "n": start + i}) for i in range(count)]
        return submit_many(bus, "producer", batch)
    finally:
        close_bus(bus)


def test_kill_9_mid_batch_loses_nothing_and_acks_nothing_unprocessed(
    bus_path: Path, tmp_path: Path, flavour: str
) -> None:
    rng = random.Random(20260101)
    store = tmp_path / "turns.sqlite"
    consumer = HERE / "chaos_consumer.py"
    submitted = _add(bus_path, 300, 0)
    kills = 0
    for round_ in range(8):
        with _spawn(consumer, bus_path, store, round_) as proc:
            assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
            time.sleep(rng.uniform(0.01, 0.12))  # the chaos schedule, not a wait for a condition
            if proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
                kills += 1
            proc.wait(timeout=30)
        submitted += _add(bus_path, 40, len(submitted))  # new work arrives between crashes
    assert kills >= 5, "the consumer finished before it could be killed: make it slower"

    with _spawn(consumer, bus_path, store, 99) as final:
        assert final.wait(timeout=60) == 0

    conn = sqlite3.connect(store)
    processed = {int(r[0]) for r in conn.execute("SELECT id FROM processed")}
    conn.close()
    assert processed == set(submitted)  # every message delivered and processed: 0 lost

    bus = connect_bus(bus_path)
    try:
        done = {
            int(r[0])
            for r in bus.conn.execute(
                f"SELECT message_id FROM {bus.state}.peerbus_receipts"
                " WHERE recipient = 'worker' AND state = 'done'"
            )
        }
        pending = bus.conn.execute("SELECT count(*) FROM returns WHERE status = 'pending'")
        pending_count = pending.fetchone()[0]
    finally:
        close_bus(bus)
    assert done == set(submitted) and done <= processed  # nothing acked unprocessed
    assert pending_count == 0
    assert _integrity(bus_path) == "ok" and _integrity(store) == "ok"
    if flavour == "compat":
        assert _integrity(bus_path.with_name(bus_path.name + ".peerbus")) == "ok"


def test_concurrent_producer_processes_lose_no_id(bus_path: Path) -> None:
    close_bus(connect_bus(bus_path))  # create (or attach) once, before the race
    producers, count = 6, 120
    procs = [_spawn(HERE / "chaos_producer.py", bus_path, f"p{n}", count) for n in range(producers)]
    handed_out: list[int] = []
    for proc in procs:
        out, _ = proc.communicate(timeout=60)
        assert proc.returncode == 0
        handed_out += json.loads(out)

    conn = sqlite3.connect(bus_path)
    rows = conn.execute("SELECT id, agent_role, payload_json FROM returns ORDER BY id").fetchall()
    conn.close()
    total = producers * count
    assert sorted(handed_out) == [r[0] for r in rows] == list(range(1, total + 1))
    seen = {(r[1], json.loads(r[2])["seq"]) for r in rows}
    assert seen == {(f"p{n}", s) for n in range(producers) for s in range(count)}
    assert all(json.loads(r[2])["producer"] == r[1] for r in rows)
    assert _integrity(bus_path) == "ok"
