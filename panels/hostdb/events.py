"""The event log: append, read after a cursor, prune. Sync SQL over a connection.

Ids come from AUTOINCREMENT, so they only grow, also across pruning and host restarts: a
viewer that remembers the last id it showed resumes exactly there.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from panels.hostdb.schema import write


@dataclass(frozen=True)
class NewEvent:
    kind: str
    panel: str | None = None
    data: dict[str, Any] = field(default_factory=dict)
    ts: float = 0.0


@dataclass(frozen=True)
class Event:
    id: int
    ts: float
    panel: str | None
    kind: str
    data: dict[str, Any]


def append_events(conn: sqlite3.Connection, events: Sequence[NewEvent]) -> list[int]:
    """Append events in one transaction; returns their ids."""
    if not events:
        return []

    def work(c: sqlite3.Connection) -> list[int]:
        ids = []
        for e in events:
            cursor = c.execute(
                "INSERT INTO events (ts, panel, kind, data) VALUES (?, ?, ?, ?)",
                (e.ts, e.panel, e.kind, json.dumps(e.data, sort_keys=True, default=str)),
            )
            ids.append(int(cursor.lastrowid or 0))
        return ids

    return write(conn, work)


def _event(row: tuple[Any, ...]) -> Event:
    try:
        data = json.loads(row[4])
    except ValueError:
        data = {"raw": row[4]}
    return Event(
        int(row[0]),
        float(row[1]),
        row[2],
        str(row[3]),
        data if isinstance(data, dict) else {"value": data},
    )


def read_events(
    conn: sqlite3.Connection,
    *,
    after: int = 0,
    panel: str | None = None,
    kinds: Sequence[str] | None = None,
    limit: int = 500,
) -> list[Event]:
    """Events with id > `after`, oldest first; filtered by panel and kinds when given."""
    sql = "SELECT id, ts, panel, kind, data FROM events WHERE id > ?"
    params: list[Any] = [after]
    if panel is not None:
        sql += " AND panel = ?"
        params.append(panel)
    if kinds:
        sql += f" AND kind IN ({','.join('?' * len(kinds))})"
        params.extend(kinds)
    sql += " ORDER BY id LIMIT ?"
    params.append(limit)
    return [_event(r) for r in conn.execute(sql, params)]


def last_events(conn: sqlite3.Connection, *, count: int, panel: str | None = None) -> list[Event]:
    """The newest `count` events (of one panel when given), oldest first."""
    sql = "SELECT id, ts, panel, kind, data FROM events"
    params: list[Any] = []
    if panel is not None:
        sql += " WHERE panel = ?"
        params.append(panel)
    sql += " ORDER BY id DESC LIMIT ?"
    params.append(count)
    return [_event(r) for r in reversed(conn.execute(sql, params).fetchall())]


def last_event_id(conn: sqlite3.Connection) -> int:
    row = conn.execute("SELECT max(id) FROM events").fetchone()
    return int(row[0] or 0)


def prune_events(conn: sqlite3.Connection, *, keep: int) -> int:
    """Delete all but the newest `keep` events; returns how many went."""

    def work(c: sqlite3.Connection) -> int:
        edge = c.execute("SELECT id FROM events ORDER BY id DESC LIMIT 1 OFFSET ?", (keep,))
        row = edge.fetchone()
        if row is None:
            return 0
        return c.execute("DELETE FROM events WHERE id <= ?", (int(row[0]),)).rowcount

    return write(conn, work)
