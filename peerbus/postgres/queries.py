"""Read-only views of the PostgreSQL bus: inbox, history, dead letters, settled, stats.

They claim and lease nothing, so operators and the dashboard run them beside the panels.
`RecipientStats.watermark` is worked out, not stored (this backend keeps no watermark):
just below the recipient's oldest row still owed, else the highest id on the bus. It is
for people to read; nothing here relies on it.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any, Literal

from peerbus.model import BusStats, DeadLetter, Pending, RecipientStats, Record
from peerbus.postgres.candidates import OPEN, route_params, rows_sql
from peerbus.postgres.pool import Conn
from peerbus.routing import Route
from sqlitekit.jsonload import load_json


def _opt(value: object) -> str | None:
    return None if value is None else str(value)


def _text(value: object) -> str:
    return "" if value is None else str(value)


def inbox(conn: Conn, route: Route, now: float, limit: int) -> list[Pending]:
    columns = """r.id, r.agent_role, r.recipient_role, r.task_id, r.submitted_at,
                 r.payload_json, d.state, d.lease_until, d.available_at,
                 coalesce(d.attempts, 0), coalesce(d.deliveries, 0)"""
    sql = rows_sql(columns=columns, receipt=OPEN, limit="%(limit)s")
    out = []
    for row in conn.execute(sql, {**route_params(route), "limit": limit}):
        state: Literal["new", "leased", "waiting"] = "new"
        if row[6] == "leased" and (row[7] or 0) > now:
            state = "leased"
        elif row[6] == "waiting" and (row[8] or 0) > now:
            state = "waiting"
        out.append(
            Pending(
                id=int(row[0]),
                sender=_text(row[1]),
                recipient=_opt(row[2]),
                topic=_opt(row[3]),
                state=state,
                attempts=int(row[9]),
                submitted_at=_text(row[4]),
                payload_json=_text(row[5]),
                deliveries=int(row[10]),
            )
        )
    return out


def history(conn: Conn, *, limit: int, role: str | None, after: int | None) -> list[Record]:
    where = "r.id > %(after)s"
    if role is not None:
        where += " AND (r.agent_role = %(role)s OR r.recipient_role = %(role)s)"
    order = "DESC" if after is None else "ASC"
    sql = f"""SELECT r.id, r.agent_role, r.recipient_role, r.task_id, r.status,
                     r.submitted_at, r.completed_at, r.payload_json
                FROM returns AS r WHERE {where} ORDER BY r.id {order} LIMIT %(limit)s"""
    params: dict[str, Any] = {"after": after or 0, "role": role, "limit": limit}
    records = [
        Record(
            int(r[0]),
            _text(r[1]),
            _opt(r[2]),
            _opt(r[3]),
            _text(r[4]),
            _text(r[5]),
            _opt(r[6]),
            _text(r[7]),
        )
        for r in conn.execute(sql, params)
    ]
    return sorted(records, key=lambda rec: rec.id)


def dead_letters(conn: Conn, *, recipient: str | None, limit: int) -> list[DeadLetter]:
    where = "d.state = 'failed'" + (" AND d.recipient = %(recipient)s" if recipient else "")
    sql = f"""SELECT d.message_id, d.recipient, r.agent_role, r.task_id, d.reason,
                     d.attempts, d.completed_at, r.payload_json, d.deliveries
                FROM peerbus_receipts AS d JOIN returns AS r ON r.id = d.message_id
               WHERE {where} ORDER BY d.message_id LIMIT %(limit)s"""
    return [
        DeadLetter(
            int(r[0]),
            _text(r[1]),
            _text(r[2]),
            _opt(r[3]),
            _text(r[4]),
            int(r[5]),
            _opt(r[6]),
            _text(r[7]),
            int(r[8]),
        )
        for r in conn.execute(sql, {"recipient": recipient, "limit": limit})
    ]


def settled(conn: Conn, recipient: str, ids: Collection[int]) -> set[int]:
    """Of `ids`, those never to be delivered to `recipient` again: acked or dead-lettered
    for it, or no longer on the bus (pruned)."""
    sql = """SELECT i FROM unnest(%s::bigint[]) AS i
              WHERE NOT EXISTS (SELECT 1 FROM returns AS r WHERE r.id = i)
                 OR EXISTS (SELECT 1 FROM peerbus_receipts AS d
                             WHERE d.message_id = i AND d.recipient = %s
                               AND d.state IN ('done', 'failed'))"""
    wanted = sorted({int(i) for i in ids})
    return {int(r[0]) for r in conn.execute(sql, (wanted, recipient))}


def stats(conn: Conn, now: float, schema_version: int) -> BusStats:
    by_status = {
        _text(s): int(n) for s, n in conn.execute("SELECT status, count(*) FROM returns GROUP BY 1")
    }
    top_row = conn.execute("SELECT coalesce(max(id), 0) FROM returns").fetchone()
    top = int(top_row[0]) if top_row else 0
    recipients = []
    for name, epoch, senders, noise, last in conn.execute(
        """SELECT recipient, epoch, senders_json, noise_acked, last_claim_at
             FROM peerbus_recipients ORDER BY recipient"""
    ).fetchall():
        route = Route(name, None if senders is None else tuple(load_json(senders)))
        owed_rows = rows_sql(
            columns="r.id AS id, d.state AS state, d.lease_until AS until",
            receipt=OPEN,
            limit=None,
        )
        owed = conn.execute(
            f"""SELECT count(*),
                       count(*) FILTER (WHERE state = 'leased' AND until > %(now)s),
                       min(id)
                  FROM ({owed_rows}) AS o""",
            {**route_params(route), "now": now},
        ).fetchone()
        assert owed is not None
        finished: dict[str, int] = dict(
            conn.execute(
                """SELECT state, count(*) FROM peerbus_receipts
                    WHERE recipient = %s AND state IN ('done', 'failed') GROUP BY 1""",
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
                watermark=top if owed[2] is None else int(owed[2]) - 1,
                last_claim_at=_opt(last),
            )
        )
    return BusStats("owned", schema_version, by_status, tuple(recipients))
