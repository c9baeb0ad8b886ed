"""Writing delivery state: receipts, the contract status, broadcast closure and watermarks.

Sync functions called inside a write transaction that the caller opened with BEGIN
IMMEDIATE. Terminal receipts (done / failed) are final for one recipient; the contract
`status` of a direct row follows its one receipt, and a broadcast's turns `done` once every
registered recipient that takes it is finished with it (owned mode only: in compatibility
mode a broadcast's status is left for its original readers).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from datetime import UTC, datetime

from peerbus.busfile import BusFile
from peerbus.candidates import Route, open_rows_sql
from peerbus.compat import queue_done


def iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="milliseconds")


def ids_json(ids: Sequence[int]) -> str:
    return json.dumps(list(ids))


def ensure_recipient(conn: sqlite3.Connection, bus: BusFile, route: Route, now: float) -> int:
    """Record the recipient (and its sender filter) on claim; returns its epoch."""
    row = conn.execute(
        f"""INSERT INTO {bus.state}.peerbus_recipients
                (recipient, epoch, senders_json, registered_at, last_claim_at)
            VALUES (?, 1, ?, ?, ?)
            ON CONFLICT (recipient) DO UPDATE SET
                senders_json = excluded.senders_json, last_claim_at = excluded.last_claim_at
            RETURNING epoch""",
        (route.recipient, route.senders_json, iso(now), iso(now)),
    ).fetchone()
    return int(row[0])


def finish(
    conn: sqlite3.Connection,
    bus: BusFile,
    recipient: str,
    finished: Sequence[tuple[int, str | None]],
    *,
    state: str,
    now: float,
    noise: bool = False,
) -> None:
    """Make receipts terminal (`done` or `failed`, with a reason) and update the contract
    status of the rows that are now finished for everyone."""
    if not finished:
        return
    when = iso(now)
    conn.executemany(
        f"""INSERT INTO {bus.state}.peerbus_receipts
                (message_id, recipient, state, completed_at, reason, noise)
            VALUES (?, ?, ?, ?, ?, ?)
            ON CONFLICT (message_id, recipient) DO UPDATE SET
                state = excluded.state, completed_at = excluded.completed_at,
                reason = excluded.reason, noise = excluded.noise,
                claim_token = NULL, lease_until = NULL""",
        [(mid, recipient, state, when, reason, int(noise)) for mid, reason in finished],
    )
    ids = ids_json([mid for mid, _ in finished])
    update_contract_status(conn, bus, recipient, ids, state=state, when=when)


def update_contract_status(
    conn: sqlite3.Connection, bus: BusFile, recipient: str, ids: str, *, state: str, when: str
) -> None:
    if bus.mode == "compat":
        # Only an ack touches a foreign table, and only its `status` column, later and in a
        # transaction of its own (see compat.py); a dead letter stays in the sidecar, so the
        # foreign row is left as its writer made it.
        if state == "done":
            queue_done(conn, recipient, ids)
        return
    conn.execute(
        """UPDATE main.returns SET status = ?, completed_at = ?
            WHERE id IN (SELECT value FROM json_each(?))
              AND recipient_role = ? AND status = 'pending'""",
        (state, when, ids, recipient),
    )
    close_broadcasts(conn, ids, when)


def close_broadcasts(conn: sqlite3.Connection, ids: str, when: str) -> None:
    """Mark broadcasts `done` once no registered recipient that takes them still owes one."""
    conn.execute(
        """UPDATE main.returns SET status = 'done', completed_at = ?
            WHERE id IN (SELECT value FROM json_each(?))
              AND recipient_role IS NULL AND status = 'pending'
              AND NOT EXISTS (
                SELECT 1 FROM main.peerbus_recipients AS p
                 WHERE p.recipient IS NOT returns.agent_role
                   AND (p.senders_json IS NULL
                        OR returns.agent_role IN (SELECT value FROM json_each(p.senders_json)))
                   AND NOT EXISTS (
                     SELECT 1 FROM main.peerbus_receipts AS d
                      WHERE d.message_id = returns.id AND d.recipient = p.recipient
                        AND d.state IN ('done', 'failed')))""",
        (when, ids),
    )


def advance_watermark(conn: sqlite3.Connection, bus: BusFile, recipient: str) -> int:
    """Move the recipient's watermark up to just below its oldest row not yet finished.

    Called after the consuming turn's ack (or a dead letter) has been written, in the same
    transaction, so the watermark never passes a row that was not processed. A nacked or
    leased row holds it back, which is why a nack below the newest acked id is redelivered.
    """
    row = conn.execute(
        f"SELECT watermark, senders_json FROM {bus.state}.peerbus_recipients WHERE recipient = ?",
        (recipient,),
    ).fetchone()
    if row is None:
        return 0
    current = int(row[0])
    route = Route(recipient, None if row[1] is None else tuple(json.loads(row[1])))
    oldest = conn.execute(
        open_rows_sql(bus, columns="r.id", order_limit=" ORDER BY 1 LIMIT 1"),
        route.params(current),
    ).fetchone()
    if oldest is not None:
        target = int(oldest[0]) - 1
    else:
        # Nothing owed: everything committed so far is behind us. Safe under the write
        # lock, since AUTOINCREMENT hands out ids in commit order.
        top = conn.execute("SELECT max(id) FROM main.returns").fetchone()[0]
        target = int(top or 0)
    if target > current:
        conn.execute(
            f"UPDATE {bus.state}.peerbus_recipients SET watermark = ? WHERE recipient = ?",
            (target, recipient),
        )
        return target
    return current
