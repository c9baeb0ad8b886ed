"""The sidecar knows which table it belongs to; read-only commands leave it alone.

A `returns` table made again at the same path (dropped and created, or the file replaced)
reuses ids the old sidecar holds receipts and watermarks for: kept, they would hide the new
rows for good. These tests make the new table and check its rows come through (more in
test_table_identity.py).
"""

from __future__ import annotations

import logging
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

import peerbus as pb
import peerbus.sqlite as sq
from peerbus.sqlite.sidecar_identity import TableStamp, judge

SEVEN = """CREATE TABLE returns (
    id INTEGER PRIMARY KEY AUTOINCREMENT, agent_role TEXT, recipient_role TEXT,
    task_id TEXT, payload_json TEXT, status TEXT DEFAULT 'pending', submitted_at TEXT)"""


def _table(path: Path, *, drop: bool = False) -> None:
    conn = sqlite3.connect(path)
    if drop:
        conn.execute("DROP TABLE returns")
    conn.execute(SEVEN)
    conn.commit()
    conn.close()


def _insert(path: Path, recipient: str | None, n: int) -> int:
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        cur = conn.execute(
            """INSERT INTO returns (agent_role, recipient_role, payload_json, status,
                   submitted_at) VALUES ('a', ?, ?, 'pending', datetime('now'))""",
            (recipient, f'{{"n": {n}}}'),
        )
        return int(cur.lastrowid or 0)
    finally:
        conn.close()


def _consume(path: Path, recipient: str = "b") -> tuple[int, ...]:
    bus = sq.connect_bus(path, pb.BusOptions(durable=False))
    try:
        claim = sq.claim_batch(bus, recipient, senders=["a"])
        sq.ack(bus, claim)
        return claim.ids
    finally:
        sq.close_bus(bus)


def test_a_table_made_again_delivers_its_new_rows(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "returns.db"
    _table(path)
    for n in range(3):
        _insert(path, "b", n)
    _insert(path, None, 9)
    assert _consume(path) == (1, 2, 3, 4)
    old = sq.connect_bus(path)
    old_identity = old.identity
    sq.close_bus(old)

    _table(path, drop=True)  # same file, same inode: only the ids tell
    fresh = [_insert(path, "b", 10), _insert(path, None, 11)]
    with caplog.at_level(logging.WARNING, logger="peerbus"):
        bus = sq.connect_bus(path)
    try:
        assert bus.notice is not None and "belonged to another `returns` table" in bus.notice
        assert bus.identity != old_identity  # remembered ids of the old table are void
        assert sq.claim_batch(bus, "b", senders=["a"]).ids == tuple(fresh)
    finally:
        sq.close_bus(bus)
    # Reported once: the next opener finds the sidecar recorded for this table.
    again = sq.connect_bus(path)
    assert again.notice is not None and "belonged to another" not in again.notice
    sq.close_bus(again)


def test_a_replaced_file_is_a_new_table(tmp_path: Path) -> None:
    path = tmp_path / "returns.db"
    _table(path)
    for n in range(5):
        _insert(path, "b", n)
    assert len(_consume(path)) == 5
    # A new file moved over the old one (the old inode is still in use while it is made,
    # so the two differ), with more rows than before: the ids alone would not tell.
    new = tmp_path / "new.db"
    _table(new)
    ids = [_insert(new, "b", n) for n in range(7)]
    os.replace(new, path)
    assert _consume(path) == tuple(ids)


def test_the_same_table_keeps_its_state(tmp_path: Path) -> None:
    path = tmp_path / "returns.db"
    _table(path)
    _insert(path, None, 1)
    assert _consume(path) == (1,)
    assert _consume(path) == ()  # the broadcast stays pending in the table, acked here


def test_judge_names_what_differs() -> None:
    stamp = TableStamp(marks=frozenset({"m1"}), high_id=3)
    assert judge({"table_mark": "m1", "max_id_seen": "3"}, stamp, 3) is None
    assert judge({}, stamp, 3) is None  # a sidecar before marks: the ids alone
    assert "peerbus_mark_m2 is gone" in (judge({"table_mark": "m2"}, stamp, 0) or "")
    assert "made again" in (judge({"table_mark": "m1"}, stamp, 4) or "")


def test_read_only_commands_do_not_create_the_sidecar(tmp_path: Path) -> None:
    path = tmp_path / "returns.db"
    _table(path)
    _insert(path, "b", 1)
    bus = sq.connect_bus(path, pb.BusOptions(inspect_only=True))
    try:
        assert [p.id for p in sq.inbox(bus, "b")] == [1]
        assert sq.stats(bus).rows_by_status == {"pending": 1}
    finally:
        sq.close_bus(bus)
    assert not list(tmp_path.glob("returns.db.*"))


def test_the_cli_says_the_notice_once_and_creates_no_sidecar(tmp_path: Path) -> None:
    path = tmp_path / "returns.db"
    _table(path)
    _insert(path, "b", 1)
    for command in (["stats"], ["inbox", "-p", "b"], ["tail"]):
        done = subprocess.run(
            [sys.executable, "-c", _CLI, "bus", *command, "--db", str(path)],
            capture_output=True,
            text=True,
            check=False,
            cwd=Path(__file__).parents[2],
        )
        assert done.returncode == 0, done.stderr
        assert done.stderr.count("compatibility mode") == 1, done.stderr
    assert not list(tmp_path.glob("returns.db.*"))


def test_a_sidecar_deleted_under_a_consumer_gets_a_clear_message(tmp_path: Path) -> None:
    path = tmp_path / "returns.db"
    _table(path)
    with subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        cwd=Path(__file__).parents[2],
    ) as holder:
        try:
            assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
            os.remove(tmp_path / "returns.db.peerbus")
            with pytest.raises(pb.SidecarLostError, match="deleted while a consumer"):
                sq.connect_bus(path)
        finally:
            holder.kill()


# The real entry point in a process of its own: in-process, pytest's log capture hides
# the second print the notice used to get from logging's last-resort handler.
_CLI = "import sys; from panels.cli.main import run_cli; sys.argv[0] = 'mnemara'; run_cli()"

_HOLDER = """
import sys, time
from pathlib import Path
import peerbus.sqlite as sq
bus = sq.connect_bus(Path(sys.argv[1]))
sq.submit(bus, "a", "b", {"n": 1})
sq.claim_batch(bus, "b")
print("ready", flush=True)
time.sleep(60)
"""
