"""Writing delivery state: receipts, the contract status, broadcast closure and watermarks.

Sync functions called inside a write transaction that the caller opened with BEGIN
IMMEDIATE. Terminal receipts (done / failed) are final for one recipient; the contract
`status` of a direct row follows its one receipt, and a broadcast's turns `done` once every
registered recipient that takes it is finished with it (owned mode only: in compatibility
mode a broadcast's status is left for its original readers). `start_route` places a
route that takes a panel over from the original mnemara past the table's history, and the
watermark's advance warns once when another consumer acks this recipient's rows.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence

from peerbus.model import iso
from peerbus.routing import Route
from peerbus.sqlite.busfile import BusFile, note_seen
from peerbus.sqlite.candidates import open_rows_sql
from peerbus.sqlite.compat import queue_done
from sqlitekit.jsonload import load_json


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
    route = Route(recipient, None if row[1] is None else tuple(load_json(row[1])))
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
    if bus.mode == "compat":
        _check_sole_consumer(conn, bus, recipient, current)
    if target > current:
        conn.execute(
            f"UPDATE {bus.state}.peerbus_recipients SET watermark = ? WHERE recipient = ?",
            (target, recipient),
        )
        note_seen(conn, bus, target)
        return target
    return current


def start_route(
    conn: sqlite3.Connection, bus: BusFile, route: Route, *, start_after: int | None, replay: bool
) -> int | None:
    """Where a route registered for the first time starts, in compatibility mode.

    A table the original mnemara already polls has history: its own watermark (taken
    over as `start_after`), else the highest id at first enable (what the original does),
    else 0 with `replay`. The route's row is made here with epoch 0, so the `register`
    that follows makes it 1, as for any new recipient; a crash between the two keeps the
    start. Returns the start, or None when the route existed (or the bus is owned: a file
    peerbus made has no one else's history, so it starts from 0 as before).
    """
    if bus.mode != "compat":
        return None
    top = int(conn.execute("SELECT coalesce(max(id), 0) FROM main.returns").fetchone()[0])
    start = 0 if replay else top if start_after is None else max(0, start_after)
    made = conn.execute(
        f"""INSERT INTO {bus.state}.peerbus_recipients
                (recipient, epoch, senders_json, watermark, registered_at)
            VALUES (?, 0, ?, ?, ?)
            ON CONFLICT (recipient) DO NOTHING
            RETURNING watermark""",
        (route.recipient, route.senders_json, start, iso(bus.now())),
    ).fetchone()
    if made is None:
        return None
    # Rows done without our ack count as a second consumer's only above this: older ones
    # may be the original's history, which a replay walks through.
    conn.execute(
        "INSERT OR REPLACE INTO side.peerbus_meta (key, value) VALUES (?, ?)",
        (f"consumer_floor:{route.recipient}", str(top)),
    )
    return int(made[0])


def _check_sole_consumer(
    conn: sqlite3.Connection, bus: BusFile, recipient: str, watermark: int
) -> None:
    """Warn once when a row addressed to `recipient` turned `done` in the table without
    our ack: another program (the original mnemara) consumes the same role."""
    if recipient in bus.warned:
        return
    floor = conn.execute(
        "SELECT CAST(value AS INTEGER) FROM side.peerbus_meta WHERE key = ?",
        (f"consumer_floor:{recipient}",),
    ).fetchone()
    row = conn.execute(
        f"""SELECT r.id FROM main.returns AS r
             WHERE r.recipient_role = ? AND r.id > ? AND r.status = 'done'
               AND NOT EXISTS (
                 SELECT 1 FROM {bus.state}.peerbus_receipts AS d
                  WHERE d.message_id = r.id AND d.recipient = r.recipient_role
                    AND d.state IN ('done', 'failed'))
             LIMIT 1""",
        (recipient, max(watermark, 0 if floor is None else int(floor[0]))),
    ).fetchone()
    if row is not None:
        bus.warn_once(
            recipient, shared_consumer_warning(bus, recipient, f"row {row[0]} was acked elsewhere")
        )


def shared_consumer_warning(bus: BusFile, recipient: str, evidence: str) -> str:
    return (
        f"{bus.path}: another program consumes panel {recipient!r} on this table too "
        f"({evidence}); stop the original mnemara's peer poll for it: a shared table "
        "cannot prevent duplicates while two consumers take the same panel's rows."
    )
