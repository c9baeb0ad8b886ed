"""Both sides of a shared table agree on what is pending: ours, and the original's poll.

The original's poll is written here from ../shared/reference/original-peer-poll.md: rows with
`status = 'pending'` above its watermark that are from one of its sender roles and addressed
to the panel or broadcast, or addressed to the panel by name; oldest first, 20 at most. Its
silent auto-ack sets `status = 'done'` (and `completed_at` where the table has it).
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from peerbus.sqlite import ack, claim_batch, close_bus, connect_bus, inbox, submit
from tests.peerbus.conftest import make_foreign, raw_insert


def original_poll(path: Path, me: str, roles: tuple[str, ...], watermark: int = 0) -> list[int]:
    if not roles:
        return []  # with no sender roles the original polls nothing
    marks = ",".join("?" * len(roles))
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        rows = conn.execute(
            f"""SELECT id FROM returns
                 WHERE status = 'pending' AND id > ?
                   AND ((agent_role IN ({marks})
                         AND (recipient_role = ? OR recipient_role IS NULL))
                        OR recipient_role = ?)
                 ORDER BY id LIMIT 20""",
            (watermark, *roles, me, me),
        ).fetchall()
    finally:
        conn.close()
    return [int(r[0]) for r in rows]


def original_silent_ack(path: Path, ident: int) -> None:
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        wide = any(r[1] == "completed_at" for r in conn.execute("PRAGMA table_info(returns)"))
        extra = ", completed_at = datetime('now')" if wide else ""
        conn.execute(f"UPDATE returns SET status = 'done'{extra} WHERE id = ?", (ident,))
    finally:
        conn.close()


@pytest.mark.parametrize("shape", ["seven", "wide"])
def test_ours_and_the_originals_poll_agree_on_what_is_pending(tmp_path: Path, shape: str) -> None:
    path = make_foreign(tmp_path / "returns.db", shape)
    # Rows the original's side writes (status left to the column default or set pending).
    theirs = [raw_insert(path, "b", json.dumps({"type": "task", "n": n})) for n in range(3)]
    noise = raw_insert(path, "b", json.dumps({"type": "ack"}))
    bus = connect_bus(path)
    try:
        ours = submit(bus, "a", "b", {"type": "task", "n": 3})
        pending = [*theirs, noise, ours]
        conn = sqlite3.connect(path)
        conn.execute("UPDATE returns SET status = 'pending' WHERE status IS NULL")
        conn.commit()
        conn.close()
        assert original_poll(path, "b", ("a",)) == pending
        assert [p.id for p in inbox(bus, "b", senders=("a",))] == pending

        # The original silences its protocol noise; ours consumes the first two tasks.
        original_silent_ack(path, noise)
        claim = claim_batch(bus, "b", senders=("a",), max_messages=2)
        assert claim.ids == tuple(theirs[:2])
        ack(bus, claim)
        left = [theirs[2], ours]
        assert original_poll(path, "b", ("a",)) == left
        assert [p.id for p in inbox(bus, "b", senders=("a",))] == left
    finally:
        close_bus(bus)
    statuses = dict(sqlite3.connect(path).execute("SELECT id, status FROM returns").fetchall())
    assert [statuses[i] for i in pending] == ["done", "done", "pending", "done", "pending"]
