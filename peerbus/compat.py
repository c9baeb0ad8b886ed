"""Compatibility mode's one write to a foreign table: `status = 'done'` on an acked row.

The delivery state lives in the sidecar and the row in the foreign file, and SQLite
commits two files atomically only through a super-journal, which WAL files (the sidecar)
cannot join: a kill -9 inside such a commit can land one file and not the other. So the
foreign write never shares a transaction with the sidecar. An ack first records its ids
in the sidecar's status outbox, with the receipts (one file); a second transaction sets
`status` in the foreign file (one file); a third clears the outbox entries it handled. A
crash anywhere leaves ids in the outbox, and the next ack, claim or open flushes them
again; the update is idempotent (`AND status = 'pending'`).
"""

from __future__ import annotations

import sqlite3

from peerbus.busfile import BusFile


def queue_done(conn: sqlite3.Connection, recipient: str, ids: str) -> None:
    """Record, in the sidecar, direct rows whose foreign `status` should become `done`."""
    conn.execute(
        """INSERT OR IGNORE INTO side.peerbus_status_outbox (message_id)
           SELECT r.id FROM main.returns AS r
            WHERE r.id IN (SELECT value FROM json_each(?)) AND r.recipient_role = ?""",
        (ids, recipient),
    )


def flush_status(bus: BusFile) -> int:
    """Write the queued `status = 'done'` updates to the foreign table; returns how many."""
    if bus.mode != "compat":
        return 0
    owed = bus.read(
        lambda c: [
            int(r[0]) for r in c.execute("SELECT message_id FROM side.peerbus_status_outbox")
        ]
    )
    if not owed:
        return 0
    marks = ",".join("?" * len(owed))

    def write_foreign(conn: sqlite3.Connection) -> None:
        conn.execute(
            f"UPDATE main.returns SET status = 'done' WHERE id IN ({marks}) AND status = 'pending'",
            owed,
        )

    def clear_outbox(conn: sqlite3.Connection) -> None:
        conn.execute(f"DELETE FROM side.peerbus_status_outbox WHERE message_id IN ({marks})", owed)

    bus.write(write_foreign)
    bus.write(clear_outbox)
    return len(owed)
