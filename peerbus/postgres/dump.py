"""Export and import a whole PostgreSQL bus, for `mnemara bus migrate`.

Export reads every table in one REPEATABLE READ transaction, so the dump is one moment of
the bus. Import refuses a bus that already holds messages (a copy never merges), writes
rows with their ids, the receipts, recipients and keys as they were, takes over the
source's `bus_id` (a panel's store recognises what it consumed), and moves the id
sequence past the highest id, so new messages never reuse one.
"""

from __future__ import annotations

from peerbus.dump import BusDump, ReceiptDump, RecipientDump, RowDump, SentDump
from peerbus.postgres.errors import PgOpenError
from peerbus.postgres.pool import Conn
from peerbus.postgres.submit import notify


def export(conn: Conn) -> BusDump:
    conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
    meta = conn.execute("SELECT value FROM peerbus_meta WHERE key = 'bus_id'").fetchone()
    rows = tuple(
        RowDump(*r)
        for r in conn.execute(
            """SELECT id, agent_role, recipient_role, task_id, payload_json, status,
                      submitted_at, completed_at, recipient_epoch FROM returns ORDER BY id"""
        )
    )
    receipts = tuple(
        ReceiptDump(*r)
        for r in conn.execute(
            """SELECT message_id, recipient, state, claim_token, lease_until, available_at,
                      attempts, deliveries, epoch, noise, completed_at, reason
                 FROM peerbus_receipts ORDER BY message_id, recipient"""
        )
    )
    recipients = tuple(
        RecipientDump(*r)
        for r in conn.execute(
            """SELECT recipient, epoch, senders_json, noise_acked, registered_at, last_claim_at
                 FROM peerbus_recipients ORDER BY recipient"""
        )
    )
    sent = tuple(
        SentDump(*r)
        for r in conn.execute("SELECT key, message_id, sent_at FROM peerbus_sent ORDER BY key")
    )
    return BusDump("" if meta is None else str(meta[0]), rows, receipts, recipients, sent)


def import_(conn: Conn, dump: BusDump, sequence: str, location: str) -> None:
    """Write `dump` into this empty bus (see the module docstring)."""
    conn.execute("LOCK TABLE returns IN EXCLUSIVE MODE")
    for table in ("returns", "peerbus_receipts", "peerbus_sent"):
        if conn.execute(f"SELECT 1 FROM {table} LIMIT 1").fetchone() is not None:
            raise PgOpenError(
                f"cannot import into this bus: its {table} table is not empty; import into "
                "a new, empty database",
                url=location,
            )
    cur = conn.cursor()
    cur.executemany(
        """INSERT INTO returns (id, agent_role, recipient_role, task_id, payload_json, status,
               submitted_at, completed_at, recipient_epoch)
           VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)""",
        [
            (
                r.id,
                r.agent_role,
                r.recipient_role,
                r.task_id,
                r.payload_json,
                r.status,
                r.submitted_at,
                r.completed_at,
                r.recipient_epoch,
            )
            for r in dump.rows
        ],
    )
    cur.executemany(
        """INSERT INTO peerbus_receipts (message_id, recipient, state, claim_token,
               lease_until, available_at, attempts, deliveries, epoch, noise, completed_at,
               reason)
           VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)""",
        [
            (
                d.message_id,
                d.recipient,
                d.state,
                d.claim_token,
                d.lease_until,
                d.available_at,
                d.attempts,
                d.deliveries,
                d.epoch,
                bool(d.noise),
                d.completed_at,
                d.reason,
            )
            for d in dump.receipts
        ],
    )
    cur.executemany(
        """INSERT INTO peerbus_recipients (recipient, epoch, senders_json, noise_acked,
               registered_at, last_claim_at)
           VALUES (%s, %s, %s, %s, %s, %s)
           ON CONFLICT (recipient) DO UPDATE SET epoch = excluded.epoch,
               senders_json = excluded.senders_json, noise_acked = excluded.noise_acked,
               registered_at = excluded.registered_at, last_claim_at = excluded.last_claim_at""",
        [
            (p.recipient, p.epoch, p.senders_json, p.noise_acked, p.registered_at, p.last_claim_at)
            for p in dump.recipients
        ],
    )
    cur.executemany(
        "INSERT INTO peerbus_sent (key, message_id, sent_at) VALUES (%s, %s, %s)",
        [(s.key, s.message_id, s.sent_at) for s in dump.sent],
    )
    if dump.bus_id:
        conn.execute("UPDATE peerbus_meta SET value = %s WHERE key = 'bus_id'", (dump.bus_id,))
    if dump.rows:
        top = max(r.id for r in dump.rows)
        conn.execute("SELECT setval(%s::regclass, %s, true)", (sequence, top))
    notify(conn, [None])
