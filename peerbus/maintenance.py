"""Operator writes: prune old finished rows, and put dead letters back in the queue.

Both work in chunks of CHUNK rows per BEGIN IMMEDIATE transaction, so pruning a large
table never holds the write lock long enough to stall the panels.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Collection

from peerbus.busfile import BusFile
from peerbus.receipts import ids_json, iso

CHUNK = 2000


def prune(bus: BusFile, *, older_than: float) -> int:
    """Delete `done` rows finished more than `older_than` seconds ago; returns the count.

    Dead letters are kept until retried. In compatibility mode, where the foreign table has
    no completed_at, the age is taken from submitted_at. The newest row is always kept, so
    a table without AUTOINCREMENT cannot hand its id out again. The idempotency keys of
    the rows it deletes go with them (keys are forgotten with their message, not by their
    own age): a key whose message is still on the bus keeps answering with its id.
    """
    cutoff = iso(bus.now() - older_than)
    age = "completed_at" if bus.mode == "owned" else "submitted_at"
    select = f"""SELECT id FROM main.returns
                  WHERE status = 'done' AND {age} < ?
                    AND id < (SELECT max(id) FROM main.returns)
                  LIMIT {CHUNK}"""

    def work(conn: sqlite3.Connection) -> int:
        ids = ids_json([int(r[0]) for r in conn.execute(select, (cutoff,))])
        for table in ("peerbus_receipts", "peerbus_sent"):
            conn.execute(
                f"""DELETE FROM {bus.state}.{table}
                     WHERE message_id IN (SELECT value FROM json_each(?))""",
                (ids,),
            )
        cursor = conn.execute(
            "DELETE FROM main.returns WHERE id IN (SELECT value FROM json_each(?))", (ids,)
        )
        return int(cursor.rowcount)

    total = 0
    while True:
        deleted = bus.write(work)
        total += deleted
        if deleted < CHUNK:
            return total


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

    def work(conn: sqlite3.Connection) -> int:
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
        for mid, who in moved:
            lowest[who] = min(lowest.get(who, int(mid)), int(mid))
        conn.executemany(
            f"""UPDATE {bus.state}.peerbus_recipients SET watermark = min(watermark, ?)
                 WHERE recipient = ?""",
            [(mid - 1, who) for who, mid in lowest.items()],
        )
        return len(moved)

    return bus.write(work, durable=True)
