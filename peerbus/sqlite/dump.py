"""A SQLite bus as a `BusDump` and back, for `mnemara bus migrate` (peerbus/dump.py).

Export reads one snapshot (one read transaction) of an owned file or of a foreign table and
its sidecar. Import writes into an owned bus file that has no messages yet, in one write
transaction: the rows keep their ids, the sequence is moved past the highest one, and the
bus takes the identity of the bus it came from.
"""

from __future__ import annotations

import sqlite3

from peerbus.dump import BusDump, ReceiptDump, RecipientDump, RowDump, SentDump
from peerbus.errors import BusOpenError
from peerbus.sqlite.busfile import BusFile
from peerbus.sqlite.compat import foreign_shape
from peerbus.sqlite.schema import read_bus_id


def export_dump(bus: BusFile) -> BusDump:
    return bus.read(lambda conn: _export(conn, bus))


def _export(conn: sqlite3.Connection, bus: BusFile) -> BusDump:
    owned = bus.mode == "owned"
    completed = "completed_at" if owned or foreign_shape(bus, conn).has_completed_at else "NULL"
    epoch = "recipient_epoch" if owned else "NULL"
    rows = tuple(
        RowDump(
            int(r[0]),
            _text(r[1]),
            _text(r[2]),
            _text(r[3]),
            _text(r[4]),
            _text(r[5]),
            _text(r[6]),
            _text(r[7]),
            None if r[8] is None else int(r[8]),
        )
        for r in conn.execute(
            f"""SELECT id, agent_role, recipient_role, task_id, payload_json, status,
                       submitted_at, {completed}, {epoch}
                  FROM main.returns ORDER BY id"""
        )
    )
    state = bus.state
    receipts = tuple(
        ReceiptDump(
            int(r[0]),
            str(r[1]),
            str(r[2]),
            r[3],
            r[4],
            float(r[5]),
            int(r[6]),
            int(r[7]),
            r[8],
            bool(r[9]),
            r[10],
            r[11],
        )
        for r in conn.execute(
            f"""SELECT message_id, recipient, state, claim_token, lease_until, available_at,
                       attempts, deliveries, epoch, noise, completed_at, reason
                  FROM {state}.peerbus_receipts ORDER BY message_id, recipient"""
        )
    )
    recipients = tuple(
        RecipientDump(str(r[0]), int(r[1]), r[2], int(r[3]), str(r[4]), r[5], int(r[6]))
        for r in conn.execute(
            f"""SELECT recipient, epoch, senders_json, noise_acked, registered_at,
                       last_claim_at, watermark
                  FROM {state}.peerbus_recipients ORDER BY recipient"""
        )
    )
    sent = tuple(
        SentDump(str(r[0]), int(r[1]), str(r[2]))
        for r in conn.execute(f"SELECT key, message_id, sent_at FROM {state}.peerbus_sent")
    )
    return BusDump(read_bus_id(conn, state) or "", rows, receipts, recipients, sent)


def _text(value: object) -> str | None:
    if value is None:
        return None
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def import_dump(bus: BusFile, dump: BusDump) -> None:
    """Write `dump` into this bus, which must be peerbus's own file with no messages yet."""
    if bus.mode != "owned":
        raise BusOpenError(
            "is a foreign table; migrate into a new bus file (or a PostgreSQL URL)", path=bus.path
        )

    def work(conn: sqlite3.Connection) -> None:
        if conn.execute("SELECT 1 FROM main.returns LIMIT 1").fetchone() is not None:
            raise BusOpenError(
                "already holds messages; migrate into a new, empty bus", path=bus.path
            )
        conn.executemany(
            """INSERT INTO main.returns (id, agent_role, recipient_role, task_id, payload_json,
                   status, submitted_at, completed_at, recipient_epoch)
               VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)""",
            [(r.id, r.agent_role, r.recipient_role, r.task_id, r.payload_json, r.status,
              r.submitted_at, r.completed_at, r.recipient_epoch) for r in dump.rows],
        )  # fmt: skip
        conn.executemany(
            """INSERT INTO main.peerbus_receipts (message_id, recipient, state, claim_token,
                   lease_until, available_at, attempts, deliveries, epoch, noise,
                   completed_at, reason)
               VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
            [(d.message_id, d.recipient, d.state, d.claim_token, d.lease_until,
              d.available_at, d.attempts, d.deliveries, d.epoch, int(d.noise),
              d.completed_at, d.reason) for d in dump.receipts],
        )  # fmt: skip
        conn.execute("DELETE FROM main.peerbus_recipients")
        conn.executemany(
            """INSERT INTO main.peerbus_recipients (recipient, epoch, senders_json,
                   watermark, noise_acked, registered_at, last_claim_at)
               VALUES (?, ?, ?, ?, ?, ?, ?)""",
            [(p.recipient, p.epoch, p.senders_json, p.watermark, p.noise_acked,
              p.registered_at, p.last_claim_at) for p in dump.recipients],
        )  # fmt: skip
        conn.executemany(
            "INSERT INTO main.peerbus_sent (key, message_id, sent_at) VALUES (?, ?, ?)",
            [(s.key, s.message_id, s.sent_at) for s in dump.sent],
        )
        if dump.bus_id:
            conn.execute(
                "UPDATE main.peerbus_meta SET value = ? WHERE key = 'bus_id'", (dump.bus_id,)
            )

    bus.write(work, durable=True)
