"""Operator writes on PostgreSQL: prune old finished rows, put dead letters back.

Prune works in chunks of CHUNK rows per transaction, so pruning a large table never holds
many row locks at once. Both are safe to run twice (pool.py's retry): a second prune finds
the rows gone, a second retry finds no dead letters left to move.
"""

from __future__ import annotations

from collections.abc import Collection
from datetime import UTC, datetime

from peerbus.postgres.pool import Conn
from peerbus.postgres.submit import notify

CHUNK = 2000


def parse_stamp(value: object) -> float | None:
    """A stored timestamp as unix seconds: ISO 8601 (a `T` or a space, with or without a
    zone; none means UTC) or a unix number; None when it cannot be read."""
    if value is None:
        return None
    text = str(value).strip()
    try:
        return float(text)
    except ValueError:
        pass
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return when.timestamp()


def prune_chunk(conn: Conn, cutoff: float, after: int) -> tuple[int, int, int]:
    """Delete `done` rows past id `after` finished before `cutoff` (by completed_at, else
    submitted_at; a stamp that cannot be read keeps the row), with their receipts and
    keys. Returns (rows scanned, rows deleted, last id scanned)."""
    rows = conn.execute(
        f"""SELECT id, completed_at, submitted_at FROM returns
             WHERE status = 'done' AND id > %s ORDER BY id LIMIT {CHUNK}""",
        (after,),
    ).fetchall()
    if not rows:
        return 0, 0, after
    old = []
    for ident, completed, submitted in rows:
        when = parse_stamp(completed if completed is not None else submitted)
        if when is not None and when <= cutoff:
            old.append(int(ident))
    for table in ("peerbus_receipts", "peerbus_sent"):
        conn.execute(f"DELETE FROM {table} WHERE message_id = ANY(%s)", (old,))
    deleted = conn.execute("DELETE FROM returns WHERE id = ANY(%s)", (old,)).rowcount
    return len(rows), deleted, int(rows[-1][0])


def retry(conn: Conn, ids: Collection[int] | None, recipient: str | None) -> int:
    """Give dead letters a fresh start (attempts back to 0); returns how many moved."""
    where = "state = 'failed'"
    params: list[object] = []
    if ids is not None:
        where += " AND message_id = ANY(%s)"
        params.append(sorted(int(i) for i in ids))
    if recipient is not None:
        where += " AND recipient = %s"
        params.append(recipient)
    moved = conn.execute(
        f"""UPDATE peerbus_receipts
               SET state = 'waiting', attempts = 0, reason = NULL, completed_at = NULL,
                   available_at = 0, claim_token = NULL
             WHERE {where}
         RETURNING message_id, recipient""",
        params,
    ).fetchall()
    if not moved:
        return 0
    conn.execute(
        """UPDATE returns SET status = 'pending', completed_at = NULL
            WHERE id = ANY(%s) AND status != 'pending'""",
        (sorted({int(m) for m, _ in moved}),),
    )
    notify(conn, sorted({str(who) for _, who in moved}))
    return len(moved)
