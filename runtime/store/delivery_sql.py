"""SQL over `delivered` and `outbox`: what turns consumed and what they asked to send.

Both tables sit outside the window on purpose: trimming, eviction, `clear` and import never
touch them, so a consumed message stays known until its ack has aged out, and a committed send
stays until it was published. Like row_sql, these functions run inside the caller's transaction
and compose with a turn's commit.

The source '' is the unknown source (rows backfilled from schema v2, or an owner that gives
none): such a row matches a query for any source, and is pruned by age even if never acked.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from runtime.store.codec import OUTBOX_COLUMNS, decode_outbox_entry, dump_json, encode_ids
from runtime.window.rows import Consumed, OutboxDraft, OutboxEntry

UNKNOWN_SOURCE = ""


def insert_delivered(
    conn: sqlite3.Connection, consumed: Consumed, *, user_row_id: int, ts: str
) -> None:
    """Record the ids as consumed by the turn of `user_row_id`; a known id keeps its record."""
    conn.executemany(
        "INSERT INTO delivered (source, message_id, user_row_id, committed_at)"
        " VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
        [(consumed.source, int(i), user_row_id, ts) for i in consumed.ids],
    )


def select_committed(conn: sqlite3.Connection, source: str, ids: Sequence[int]) -> dict[int, int]:
    """Of `ids`, those recorded for `source` (or the unknown source): id -> user_row_id."""
    # One primary-key lookup per (source, id): the cost follows len(ids), not the table.
    cursor = conn.execute(
        "SELECT message_id, user_row_id, source FROM delivered"
        " WHERE source IN (?, ?) AND message_id IN (SELECT value FROM json_each(?))",
        (source, UNKNOWN_SOURCE, encode_ids(list(ids))),
    )
    found: dict[int, int] = {}
    for message_id, user_row_id, row_source in cursor:
        # Both a source's own record and a legacy one may exist; the source's own one wins.
        if row_source == source or int(message_id) not in found:
            found[int(message_id)] = int(user_row_id)
    return found


def update_acked(conn: sqlite3.Connection, source: str, ids: Sequence[int], *, ts: str) -> int:
    """Stamp the first ack of the ids (theirs and matching unknown-source rows); rows changed."""
    cursor = conn.execute(
        "UPDATE delivered SET acked_at = ? WHERE acked_at IS NULL AND source IN (?, ?)"
        " AND message_id IN (SELECT value FROM json_each(?))",
        (ts, source, UNKNOWN_SOURCE, encode_ids(list(ids))),
    )
    return cursor.rowcount


def select_unacked(conn: sqlite3.Connection, source: str, limit: int) -> list[int]:
    """Ids recorded for `source` whose ack was never noted, oldest first."""
    cursor = conn.execute(
        "SELECT message_id FROM delivered WHERE source = ? AND acked_at IS NULL"
        " ORDER BY committed_at, message_id LIMIT ?",
        (source, max(0, limit)),
    )
    return [int(values[0]) for values in cursor]


def insert_outbox(
    conn: sqlite3.Connection,
    drafts: Sequence[OutboxDraft],
    *,
    user_row_id: int,
    ts: str,
    source: str = UNKNOWN_SOURCE,
) -> None:
    """Store a turn's sends in the order queued; position i is the send labelled `row.i`.
    `source` is where the turn's input came from: the sends go out there only."""
    conn.executemany(
        "INSERT INTO outbox (key, source, user_row_id, position, recipient, topic, payload,"
        " created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        [
            (d.key, source, user_row_id, position, d.recipient, d.topic, dump_json(d.payload), ts)
            for position, d in enumerate(drafts)
        ],
    )


def select_pending(conn: sqlite3.Connection, source: str | None) -> list[OutboxEntry]:
    """Sends neither published nor failed, oldest first (the partial index holds just these);
    with `source`, only those of that source or of the unknown one."""
    where = "published_at IS NULL AND failed IS NULL"
    params: tuple[str, ...] = ()
    if source is not None:
        where += " AND source IN (?, ?)"
        params = (source, UNKNOWN_SOURCE)
    cursor = conn.execute(f"SELECT {OUTBOX_COLUMNS} FROM outbox WHERE {where} ORDER BY id", params)
    return [decode_outbox_entry(values) for values in cursor]


def select_outbox(conn: sqlite3.Connection, limit: int) -> list[OutboxEntry]:
    """The newest `limit` sends, newest last."""
    cursor = conn.execute(
        f"SELECT {OUTBOX_COLUMNS} FROM outbox ORDER BY id DESC LIMIT ?", (max(0, limit),)
    )
    return [decode_outbox_entry(values) for values in reversed(cursor.fetchall())]


def has_outbox_key(conn: sqlite3.Connection, key: str) -> bool:
    return conn.execute("SELECT 1 FROM outbox WHERE key = ?", (key,)).fetchone() is not None


def update_published(conn: sqlite3.Connection, key: str, message_id: int, *, ts: str) -> None:
    """Mark the send published; a second mark (a retried publish) keeps the first record."""
    conn.execute(
        "UPDATE outbox SET published_at = ?, message_id = ?, failed = NULL, failed_at = NULL"
        " WHERE key = ? AND published_at IS NULL",
        (ts, int(message_id), key),
    )


def update_failed(conn: sqlite3.Connection, key: str, reason: str, *, ts: str) -> None:
    """Give up on an unpublished send; a published one stays published."""
    conn.execute(
        "UPDATE outbox SET failed = ?, failed_at = ? WHERE key = ? AND published_at IS NULL",
        (reason, ts, key),
    )


def prune(conn: sqlite3.Connection, *, cutoff: str) -> int:
    """Delete settled state older than `cutoff`; rows deleted.

    Never an unacked delivered row of a known source (its message may still come back from the
    bus) nor an unpublished send. Timestamps share one ISO format, so they compare as text.
    """
    deleted = conn.execute(
        "DELETE FROM delivered WHERE acked_at IS NOT NULL AND acked_at < ?", (cutoff,)
    ).rowcount
    deleted += conn.execute(
        "DELETE FROM delivered WHERE source = ? AND committed_at < ?", (UNKNOWN_SOURCE, cutoff)
    ).rowcount
    # A scan, once per session start: the outbox holds the retention period's sends only.
    deleted += conn.execute(
        "DELETE FROM outbox WHERE published_at < ? OR (published_at IS NULL AND failed_at < ?)",
        (cutoff, cutoff),
    ).rowcount
    return deleted
