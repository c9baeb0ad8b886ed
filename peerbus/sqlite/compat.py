"""Compatibility mode's writes to a foreign table: rows shaped as it requires, and acks.

The delivery state lives in the sidecar and the row in the foreign file, and SQLite
commits two files atomically only through a super-journal, which WAL files (the sidecar)
cannot join: a kill -9 inside such a commit can land one file and not the other. So the
foreign write never shares a transaction with the sidecar. An ack first records its ids
in the sidecar's status outbox, with the receipts (one file); a second transaction sets
`status` (and `completed_at` / `processed_at` when the table has them) in the foreign file
(one file); a third clears the outbox entries it handled. A crash anywhere leaves ids in
the outbox, and the next ack, claim or open flushes them again; the update is idempotent
(`AND status = 'pending'`).

What the table requires beyond the contract columns is its `ForeignShape` (shape.py), read
at open and kept on the bus.
"""

from __future__ import annotations

import sqlite3

from peerbus.sqlite.busfile import BusFile
from peerbus.sqlite.shape import ForeignShape, read_shape, require_writable, stamp_style


def foreign_shape(bus: BusFile, conn: sqlite3.Connection) -> ForeignShape:
    """The foreign table's shape: the one read at open, or (on a bus built without one)
    read now over `conn`, inside the caller's transaction."""
    return bus.shape if bus.shape is not None else read_shape(conn)


def writable_shape(bus: BusFile, conn: sqlite3.Connection) -> ForeignShape:
    """The shape, for a submit: a table it could not write is refused (BusOpenError) before
    any INSERT, never with SQLite's bare NOT NULL error. Open refuses it first."""
    shape = foreign_shape(bus, conn)
    require_writable(shape, bus.path)
    return shape


def session_id(bus: BusFile) -> str:
    """What we write in a foreign table's required `session_id`.

    The original fills it with the agent session that wrote the row; a peerbus row has no
    such session. This value names the writer (peerbus) and the bus state it belongs to
    (the bus identity), is the same for every peerbus process on this table, cannot be
    mistaken for one of the original's sessions, and lets a reader tell our rows apart.
    """
    return f"peerbus-{bus.identity[:12]}"


def queue_done(conn: sqlite3.Connection, recipient: str, ids: str) -> None:
    """Record, in the sidecar, direct rows whose foreign `status` should become `done`."""
    conn.execute(
        """INSERT OR IGNORE INTO side.peerbus_status_outbox (message_id)
           SELECT r.id FROM main.returns AS r
            WHERE r.id IN (SELECT value FROM json_each(?)) AND r.recipient_role = ?""",
        (ids, recipient),
    )


def flush_status(bus: BusFile) -> int:
    """Write the queued `status = 'done'` updates to the foreign table; returns how many.

    Where the table has `completed_at` / `processed_at` (the original writes the first on
    its own acks), an empty one gets the ack's time, in the other writers' stamp format.
    """
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
        shape = foreign_shape(bus, conn)
        stamps = [c for c, has in _done_stamps(shape) if has]
        when = stamp_style(conn).format(bus.now())
        sets = "".join(f", {c} = coalesce({c}, ?)" for c in stamps)
        conn.execute(
            f"""UPDATE main.returns SET status = 'done'{sets}
                 WHERE id IN ({marks}) AND status = 'pending'""",
            [*([when] * len(stamps)), *owed],
        )

    def clear_outbox(conn: sqlite3.Connection) -> None:
        conn.execute(f"DELETE FROM side.peerbus_status_outbox WHERE message_id IN ({marks})", owed)

    bus.write(write_foreign)
    bus.write(clear_outbox)
    return len(owed)


def _done_stamps(shape: ForeignShape) -> tuple[tuple[str, bool], ...]:
    return (("completed_at", shape.has_completed_at), ("processed_at", shape.has_processed_at))
