"""Chaos: the consumer is killed with SIGKILL mid-batch again and again, and producers race.

Part of the conformance suite: it runs on every backend (the SQLite flavours and
PostgreSQL). The consumer script commits the ids it processed to its own store before
acking, like the host; the invariants are the bus's promises: every message processed at
least once, nothing acked that was not processed, no id lost or handed out twice, and (on
SQLite) both files intact.
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
from typing import Any

import anyio
import pytest

from peerbus import BusOptions, Outgoing, open_bus

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


def _on_bus(location: str, work: Any) -> Any:
    """Run `await work(bus)` on the bus at `location`, from this (sync) test."""

    async def run() -> Any:
        async with open_bus(location, options=BusOptions(lock_deadline=30)) as bus:
            return await work(bus)

    return anyio.run(run)


def _add(location: str, count: int, start: int) -> list[int]:
    batch = [Outgoing("worker", {"type": "work", "n": start + i}) for i in range(count)]
    return list(_on_bus(location, lambda bus: bus.submit_many("producer", batch)))


def test_kill_9_mid_batch_loses_nothing_and_acks_nothing_unprocessed(
    bus_location: str, tmp_path: Path, backend_flavour: str
) -> None:
    rng = random.Random(20260101)
    store = tmp_path / "turns.sqlite"
    consumer = HERE / "chaos_consumer.py"
    submitted = _add(bus_location, 300, 0)
    kills = 0
    for round_ in range(8):
        with _spawn(consumer, bus_location, store, round_) as proc:
            assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
            time.sleep(rng.uniform(0.01, 0.12))  # the chaos schedule, not a wait for a condition
            if proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
                kills += 1
            proc.wait(timeout=30)
        submitted += _add(bus_location, 40, len(submitted))  # new work arrives between crashes
    assert kills >= 5, "the consumer finished before it could be killed: make it slower"

    with _spawn(consumer, bus_location, store, 99) as final:
        assert final.wait(timeout=60) == 0

    conn = sqlite3.connect(store)
    processed = {int(r[0]) for r in conn.execute("SELECT id FROM processed")}
    conn.close()
    assert processed == set(submitted)  # every message delivered and processed: 0 lost

    async def final_state(bus: Any) -> tuple[set[int], list[Any], Any]:
        settled = await bus.settled("worker", submitted)
        return settled, await bus.dead_letters(), await bus.stats()

    settled, dead, stats = _on_bus(bus_location, final_state)
    # Settled and none dead: every message acked, and (above) each one was processed first.
    assert settled == set(submitted) and not dead
    assert stats.rows_by_status.get("pending", 0) == 0
    assert _integrity(store) == "ok"
    if backend_flavour != "postgres":
        bus_path = Path(bus_location)
        assert _integrity(bus_path) == "ok"
        if backend_flavour == "compat":
            assert _integrity(bus_path.with_name(bus_path.name + ".peerbus")) == "ok"


def test_concurrent_producer_processes_lose_no_id(bus_location: str, backend_flavour: str) -> None:
    _on_bus(bus_location, lambda bus: bus.stats())  # create (or attach) once, before the race
    producers, count = 6, 120
    procs = [
        _spawn(HERE / "chaos_producer.py", bus_location, f"p{n}", count) for n in range(producers)
    ]
    handed_out: list[int] = []
    for proc in procs:
        out, _ = proc.communicate(timeout=60)
        assert proc.returncode == 0
        handed_out += json.loads(out)

    total = producers * count
    rows = sorted(_on_bus(bus_location, lambda bus: bus.history(limit=total + 10)),
                  key=lambda r: r.id)  # fmt: skip
    ids = [r.id for r in rows]
    assert sorted(handed_out) == ids and len(set(ids)) == total  # none lost, none twice
    if backend_flavour != "postgres":  # SQLite hands ids out in commit order, with no gaps
        assert ids == list(range(1, total + 1))
    seen = {(r.sender, json.loads(r.payload_json)["seq"]) for r in rows}
    assert seen == {(f"p{n}", s) for n in range(producers) for s in range(count)}
    assert all(json.loads(r.payload_json)["producer"] == r.sender for r in rows)
    if backend_flavour != "postgres":
        assert _integrity(Path(bus_location)) == "ok"
