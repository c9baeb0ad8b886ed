"""Operator writes: prune old finished rows, and put dead letters back in the queue.

Both work in chunks of CHUNK rows per BEGIN IMMEDIATE transaction, so pruning a large
table never holds the write lock long enough to stall the panels.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Collection
from functools import partial

from peerbus.sqlite.busfile import BusFile
from peerbus.sqlite.compat import foreign_shape
from peerbus.sqlite.receipts import ids_json
from peerbus.sqlite.shape import parse_stamp

CHUNK = 2000


def prune(bus: BusFile, *, older_than: float) -> int:
    """Delete `done` rows finished more than `older_than` seconds ago; returns the count.

    A row's age is its `completed_at` when the table has one and it is set, else its
    `submitted_at`. Stamps are parsed, not compared as text: a foreign table may hold ISO
    stamps with `T` or a space, with or without fraction or zone, or unix numbers (see
    shape.parse_stamp), and `2026-01-01 10:00:00` sorts before `2026-01-01T09:00:00`. A
    row whose stamp cannot be read is kept, and so is one newer than the cutoff.

    Dead letters are kept until retried. The newest row is always kept, so a table without
    AUTOINCREMENT cannot hand its id out again. The idempotency keys of the rows it deletes
    go with them (keys are forgotten with their message, not by their own age): a key whose
    message is still on the bus keeps answering with its id.
    """
    cutoff = bus.now() - older_than

    def work(conn: sqlite3.Connection, after: int) -> tuple[int, int, int]:
        """One chunk past id `after`: (rows scanned, rows deleted, last id scanned)."""
        has_completed = bus.mode == "owned" or foreign_shape(bus, conn).has_completed_at
        completed = "completed_at" if has_completed else "NULL"
        rows = conn.execute(
            f"""SELECT id, {completed}, submitted_at FROM main.returns
                 WHERE status = 'done' AND id > ? AND id < (SELECT max(id) FROM main.returns)
                 ORDER BY id LIMIT {CHUNK}""",
            (after,),
        ).fetchall()
        if not rows:
            return 0, 0, after
        ids = ids_json([int(r[0]) for r in rows if _finished_before(r[1], r[2], cutoff)])
        tables = ("peerbus_receipts", "peerbus_sent")
        for table in (*tables, "peerbus_own") if bus.mode == "compat" else tables:
            conn.execute(
                f"""DELETE FROM {bus.state}.{table}
                     WHERE message_id IN (SELECT value FROM json_each(?))""",
                (ids,),
            )
        cursor = conn.execute(
            "DELETE FROM main.returns WHERE id IN (SELECT value FROM json_each(?))", (ids,)
        )
        return len(rows), int(cursor.rowcount), int(rows[-1][0])

    total, after = 0, 0
    while True:
        scanned, deleted, after = bus.write(partial(work, after=after))
        total += deleted
        if scanned < CHUNK:
            return total


def _finished_before(completed: object, submitted: object, cutoff: float) -> bool:
    """True when the row's age stamp says it finished before `cutoff`; False when unknown."""
    when = parse_stamp(completed if completed is not None else submitted)
    return when is not None and when <= cutoff


def retry(bus: BusFile, *, ids: Collection[int] | None = None, recipient: str | None = None) -> int:
    """Give dead letters a fresh start (attempts back to 0); returns how many receipts moved.

    With neither `ids` nor `recipient`, every dead letter is retried.
    """
    where = "state = 'failed'"
    params: list[object] = []
    if ids is not None:
        where += " AND message_id IN (SELECT value FROM json_each(?))"
        params.append(ids_json(sorted(ids)))
    if recipient is not None:
        where += " AND recipient = ?"
        params.append(recipient)

    woken: set[str] = set()

    def work(conn: sqlite3.Connection) -> int:
        woken.clear()  # a retried transaction starts over
        moved = conn.execute(
            f"""UPDATE {bus.state}.peerbus_receipts
                   SET state = 'waiting', attempts = 0, reason = NULL, completed_at = NULL,
                       available_at = 0
                 WHERE {where}
             RETURNING message_id, recipient""",
            params,
        ).fetchall()
        if not moved:
            return 0
        if bus.mode == "owned":
            conn.execute(
                """UPDATE main.returns SET status = 'pending', completed_at = NULL
                    WHERE id IN (SELECT value FROM json_each(?)) AND status != 'pending'""",
                (ids_json(sorted({int(m) for m, _ in moved})),),
            )
        # The watermark may have passed a dead letter; pull it back below the oldest retried.
        lowest: dict[str, int] = {}
        woken.update(str(who) for _, who in moved)
        for mid, who in moved:
            lowest[who] = min(lowest.get(who, int(mid)), int(mid))
        conn.executemany(
            f"""UPDATE {bus.state}.peerbus_recipients SET watermark = min(watermark, ?)
                 WHERE recipient = ?""",
            [(mid - 1, who) for who, mid in lowest.items()],
        )
        return len(moved)

    count = bus.write(work, durable=True)
    bus.touch(woken)  # after the commit: the retried messages are claimable now
    return count
