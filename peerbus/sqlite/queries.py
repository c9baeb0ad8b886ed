"""Read-only views of the bus: a recipient's inbox, history, dead letters, and stats.

These never claim or lease anything, so operators and the dashboard can run them beside
the panels at any time.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Collection

from peerbus.model import BusStats, DeadLetter, Pending, RecipientStats, Record
from peerbus.render import cell_text
from peerbus.routing import Route
from peerbus.sqlite.busfile import BusFile
from peerbus.sqlite.candidates import open_rows_sql
from peerbus.sqlite.compat import foreign_shape
from sqlitekit.jsonload import load_json


def _opt(value: object) -> str | None:
    return None if value is None else cell_text(value)


def inbox(
    bus: BusFile, recipient: str, *, senders: Collection[str] | None = None, limit: int = 100
) -> list[Pending]:
    """What the recipient is still owed, oldest first, without claiming it."""
    route = Route.of(recipient, senders)
    now = bus.now()
    columns = """r.id, r.agent_role, r.recipient_role, r.task_id, r.submitted_at,
                 r.payload_json, d.state, d.lease_until, d.available_at,
                 coalesce(d.attempts, 0), coalesce(d.deliveries, 0)"""

    def work(conn: sqlite3.Connection) -> list[Pending]:
        mark = conn.execute(
            f"SELECT watermark FROM {bus.state}.peerbus_recipients WHERE recipient = ?",
            (recipient,),
        ).fetchone()
        sql = open_rows_sql(bus, columns=columns, order_limit=" ORDER BY 1 LIMIT :limit")
        params = route.params(0 if mark is None else int(mark[0]))
        params["limit"] = limit
        out = []
        for row in conn.execute(sql, params):
            state = "new"
            if row[6] == "leased" and (row[7] or 0) > now:
                state = "leased"
            elif row[6] == "waiting" and (row[8] or 0) > now:
                state = "waiting"
            out.append(
                Pending(
                    id=int(row[0]),
                    sender=cell_text(row[1]),
                    recipient=_opt(row[2]),
                    topic=_opt(row[3]),
                    state=state,  # type: ignore[arg-type]
                    attempts=int(row[9]),
                    submitted_at=cell_text(row[4]),
                    payload_json=cell_text(row[5]),
                    deliveries=int(row[10]),
                )
            )
        return out

    return bus.read(work)


def history(
    bus: BusFile, *, limit: int = 50, role: str | None = None, after: int | None = None
) -> list[Record]:
    """Rows in id order: the newest `limit`, or with `after`, the first `limit` past it.

    A foreign table's own `completed_at` is shown when it has one (the original writes it
    with `status = 'done'` on its acks); a row with it set and `status` still `pending`
    is shown `done`, as whoever stamped it meant. (Claims and inboxes go by `status`
    alone, as the original's poll does, so both sides agree on what is pending.)
    """
    where = "r.id > :after"
    if role is not None:
        where += " AND (r.agent_role = :role OR r.recipient_role = :role)"
    order = "DESC" if after is None else "ASC"

    def work(conn: sqlite3.Connection) -> list[Record]:
        has_completed = bus.mode == "owned" or foreign_shape(bus, conn).has_completed_at
        completed = "r.completed_at" if has_completed else "NULL"
        sql = f"""SELECT r.id, r.agent_role, r.recipient_role, r.task_id,
                         CASE WHEN {completed} IS NOT NULL AND r.status = 'pending'
                              THEN 'done' ELSE r.status END,
                         r.submitted_at, {completed}, r.payload_json
                    FROM main.returns AS r WHERE {where} ORDER BY r.id {order} LIMIT :limit"""
        params = {"after": after or 0, "role": role, "limit": limit}
        rows = conn.execute(sql, params).fetchall()
        records = [
            Record(
                int(r[0]),
                cell_text(r[1]),
                _opt(r[2]),
                _opt(r[3]),
                cell_text(r[4]),
                cell_text(r[5]),
                _opt(r[6]),
                cell_text(r[7]),
            )
            for r in rows
        ]
        return sorted(records, key=lambda rec: rec.id)

    return bus.read(work)


def dead_letters(
    bus: BusFile, *, recipient: str | None = None, limit: int = 100
) -> list[DeadLetter]:
    """Messages given up for a recipient, with the reason, oldest first."""
    where = "d.state = 'failed'" + (" AND d.recipient = :recipient" if recipient else "")
    sql = f"""SELECT d.message_id, d.recipient, r.agent_role, r.task_id, d.reason,
                     d.attempts, d.completed_at, r.payload_json, d.deliveries
                FROM {bus.state}.peerbus_receipts AS d
                JOIN main.returns AS r ON r.id = d.message_id
               WHERE {where} ORDER BY d.message_id LIMIT :limit"""

    def work(conn: sqlite3.Connection) -> list[DeadLetter]:
        return [
            DeadLetter(
                int(r[0]),
                cell_text(r[1]),
                cell_text(r[2]),
                _opt(r[3]),
                cell_text(r[4]),
                int(r[5]),
                _opt(r[6]),
                cell_text(r[7]),
                int(r[8]),
            )
            for r in conn.execute(sql, {"recipient": recipient, "limit": limit})
        ]

    return bus.read(work)


def settled(bus: BusFile, recipient: str, ids: Collection[int]) -> set[int]:
    """Of `ids`, those that can never be delivered to `recipient` again: acked or
    dead-lettered for it, or no longer on the bus at all (pruned)."""
    wanted = json.dumps(sorted({int(i) for i in ids}))
    sql = f"""SELECT j.value FROM json_each(?) AS j
               WHERE NOT EXISTS (SELECT 1 FROM main.returns AS r WHERE r.id = j.value)
                  OR EXISTS (SELECT 1 FROM {bus.state}.peerbus_receipts AS d
                              WHERE d.message_id = j.value AND d.recipient = ?
                                AND d.state IN ('done', 'failed'))"""
    return bus.read(lambda conn: {int(r[0]) for r in conn.execute(sql, (wanted, recipient))})


def stats(bus: BusFile) -> BusStats:
    """Row counts by status, and per registered recipient what it is owed and has done."""
    now = bus.now()

    def work(conn: sqlite3.Connection) -> BusStats:
        by_status = {
            cell_text(s): int(n)
            for s, n in conn.execute("SELECT status, count(*) FROM main.returns GROUP BY 1")
        }
        recipients = []
        for name, epoch, senders, mark, noise, last in conn.execute(
            f"""SELECT recipient, epoch, senders_json, watermark, noise_acked, last_claim_at
                  FROM {bus.state}.peerbus_recipients ORDER BY recipient"""
        ).fetchall():
            route = Route(name, None if senders is None else tuple(load_json(senders)))
            owed_rows = open_rows_sql(bus, columns="d.state AS state, d.lease_until AS until")
            owed = conn.execute(
                f"""SELECT count(*), coalesce(sum(state = 'leased' AND until > :now), 0)
                      FROM ({owed_rows})""",
                {**route.params(int(mark)), "now": now},
            ).fetchone()
            finished = dict(
                conn.execute(
                    f"""SELECT state, count(*) FROM {bus.state}.peerbus_receipts
                         WHERE recipient = ? AND state IN ('done', 'failed') GROUP BY 1""",
                    (name,),
                ).fetchall()
            )
            recipients.append(
                RecipientStats(
                    recipient=name,
                    epoch=int(epoch),
                    waiting=int(owed[0]) - int(owed[1]),
                    leased=int(owed[1]),
                    done=int(finished.get("done", 0)),
                    failed=int(finished.get("failed", 0)),
                    noise_acked=int(noise),
                    watermark=int(mark),
                    last_claim_at=_opt(last),
                )
            )
        return BusStats(bus.mode, bus.schema_version, by_status, tuple(recipients))

    return bus.read(work)
