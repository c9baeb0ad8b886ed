"""Write transactions: always BEGIN IMMEDIATE, and a long-held lock is waited out, not fatal."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import textwrap
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

import peerbus as pb
import peerbus.sqlite as sq
from peerbus import BusBusyError, BusOptions
from peerbus.sqlite import BusFile
from peerbus.sqlite.txn import RetryPolicy

WRITES = ("INSERT", "UPDATE", "DELETE", "CREATE", "ALTER", "DROP", "REPLACE")


def _exercise(bus: BusFile, clock: Callable[[], float], insert_raw: Callable[..., int]) -> None:
    sq.register(bus, "b", senders=["a"])
    sq.submit(bus, "a", "b", {"n": 1})
    sq.submit(bus, "a", None, {"type": "ack"})
    sq.submit_many(bus, "a", [pb.Outgoing("b", {"n": 2}, key="k"), pb.Outgoing("b", {}, key="k")])
    insert_raw("b", "{broken")
    claim = sq.claim_batch(bus, "b", senders=["a"])
    sq.extend(bus, claim, lease=60)
    sq.nack(bus, claim, count=False)
    claim = sq.claim_batch(bus, "b", senders=["a"])
    sq.nack(bus, claim, only=claim.ids[:1])
    sq.fail(bus, claim, reason="cannot be handled", only=claim.ids[1:])
    sq.ack(bus, sq.claim_batch(bus, "b", senders=["a"]))
    sq.retry(bus)
    sq.prune(bus, older_than=0)
    sq.inbox(bus, "b")
    sq.history(bus)
    sq.dead_letters(bus)
    sq.stats(bus)


def test_no_write_ever_runs_outside_begin_immediate(
    sync_bus: BusFile, clock: Callable[[], float], insert_raw: Callable[..., int]
) -> None:
    statements: list[str] = []
    sync_bus.conn.set_trace_callback(statements.append)
    _exercise(sync_bus, clock, insert_raw)
    sync_bus.conn.set_trace_callback(None)

    txn: str | None = None
    writes = 0
    for raw in statements:
        sql = " ".join(raw.split()).upper()
        if sql.startswith("BEGIN"):
            assert txn is None, "nested BEGIN"
            txn = sql
        elif sql in ("COMMIT", "ROLLBACK"):
            txn = None
        elif sql.startswith(WRITES) or (sql.startswith("WITH") and " RETURNING " in sql):
            writes += 1
            assert txn == "BEGIN IMMEDIATE", f"write outside BEGIN IMMEDIATE: {raw}"
    assert writes > 10 and txn is None


def test_a_lock_held_past_busy_timeout_is_retried_with_back_off(tmp_path: Path) -> None:
    path = tmp_path / "bus.sqlite"
    sq.close_bus(sq.connect_bus(path))
    blocker = sqlite3.connect(path, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")
    waits: list[float] = []

    def sleep(seconds: float) -> None:
        waits.append(seconds)
        if len(waits) == 3:
            blocker.execute("COMMIT")  # the long writer finally lets go

    retry = RetryPolicy(deadline=60, sleep=sleep, jitter=lambda: 1.0)
    bus = sq.connect_bus(path, BusOptions(busy_timeout=0.02), retry=retry)
    try:
        assert sq.submit(bus, "a", "b", {"n": 1}) == 1
    finally:
        sq.close_bus(bus)
        blocker.close()
    assert waits == [0.01, 0.02, 0.04]


def test_a_lock_held_past_the_deadline_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "bus.sqlite"
    sq.close_bus(sq.connect_bus(path))
    blocker = sqlite3.connect(path, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")
    elapsed = [0.0]

    def sleep(seconds: float) -> None:
        elapsed[0] += seconds

    retry = RetryPolicy(deadline=1.0, sleep=sleep, monotonic=lambda: elapsed[0])
    bus = sq.connect_bus(path, BusOptions(busy_timeout=0.01, lock_deadline=1.0), retry=retry)
    try:
        with pytest.raises(BusBusyError) as err:
            sq.submit(bus, "a", "b", {"n": 1})
        assert err.value.attempts > 3 and "locked" in str(err.value)
    finally:
        sq.close_bus(bus)
        blocker.close()


HOLDER = textwrap.dedent(
    """
    import sqlite3, sys, time
    conn = sqlite3.connect(sys.argv[1], isolation_level=None)
    conn.execute("BEGIN IMMEDIATE")
    conn.execute("INSERT INTO returns (agent_role, status) VALUES ('h', 'done')")
    print("locked", flush=True)
    time.sleep(float(sys.argv[2]))
    conn.execute("COMMIT")
    """
)


@pytest.mark.slow
def test_another_process_holding_the_lock_past_busy_timeout_never_crashes_us(
    tmp_path: Path,
) -> None:
    path = tmp_path / "bus.sqlite"
    sq.close_bus(sq.connect_bus(path))
    with subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(path), "0.6"], stdout=subprocess.PIPE, text=True
    ) as holder:
        _wait_behind_the_holder(holder, path)


def _wait_behind_the_holder(holder: subprocess.Popen[str], path: Path) -> None:
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        bus = sq.connect_bus(path, BusOptions(busy_timeout=0.05, lock_deadline=30))
        try:
            ident = sq.submit(bus, "a", "b", {"n": 1})
        finally:
            sq.close_bus(bus)
        assert ident == 2  # after the holder's row: it waited for the holder's commit
    finally:
        assert holder.wait(timeout=30) == 0


def test_writers_queue_on_the_gate_and_a_stuck_holder_hits_the_deadline(tmp_path: Path) -> None:
    path = tmp_path / "bus.sqlite"
    holder = sq.connect_bus(path)
    assert holder.gate is not None and holder.gate.path == tmp_path / "bus.sqlite.writers"
    holder.gate.acquire(timeout=0)
    waiter = sq.connect_bus(path, BusOptions(busy_timeout=0.01, lock_deadline=0.2))
    try:
        with pytest.raises(BusBusyError):
            sq.submit(waiter, "a", "b", {"n": 1})
        holder.gate.release()
        assert sq.submit(waiter, "a", "b", {"n": 1}) == 1
        assert sq.submit(holder, "a", "b", {"n": 2}) == 2  # the given-up wait let go again
    finally:
        sq.close_bus(waiter)
        sq.close_bus(holder)


def test_a_gate_wait_hands_over_when_the_holder_lets_go(tmp_path: Path) -> None:
    path = tmp_path / "bus.sqlite"
    holder = sq.connect_bus(path)
    waiter = sq.connect_bus(path)
    assert holder.gate is not None
    holder.gate.acquire(timeout=0)
    try:
        timer = threading.Timer(0.05, holder.gate.release)  # the holder's commit, later
        timer.start()
        assert sq.submit(waiter, "a", "b", {"n": 1}) == 1
        timer.join()
    finally:
        sq.close_bus(waiter)
        sq.close_bus(holder)


def test_durable_submits_fsync_and_claims_do_not(sync_bus: BusFile) -> None:
    statements: list[str] = []
    sync_bus.conn.set_trace_callback(statements.append)
    sq.submit(sync_bus, "a", "b", {"n": 1})
    sq.ack(sync_bus, sq.claim_batch(sync_bus, "b"))
    sync_bus.conn.set_trace_callback(None)
    levels = [s.split("=")[1].strip() for s in statements if "synchronous =" in s]
    # The conftest bus is durable=False: nothing asks for FULL there.
    assert set(levels) == {"NORMAL"}
    durable = sq.connect_bus(sync_bus.path, BusOptions(durable=True))
    try:
        durable.conn.set_trace_callback(statements.append)
        statements.clear()
        sq.submit(durable, "a", "b", {"n": 2})
        sq.ack(durable, sq.claim_batch(durable, "b"))
        levels = [s.split("=")[1].strip() for s in statements if "synchronous =" in s]
        assert levels[0] == "FULL" and set(levels[1:]) == {"NORMAL"}
    finally:
        sq.close_bus(durable)
