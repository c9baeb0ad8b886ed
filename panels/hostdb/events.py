"""The event log: append typed events, read them back after a cursor, prune. Sync SQL.

Rows are `(id, ts, panel, kind, data)`; what they hold is a `HostEvent` of the catalogue
(catalogue.py), which alone turns rows into events and back. Ids come from AUTOINCREMENT, so
they only grow, also across pruning and host restarts: a viewer that remembers the last id
it showed resumes exactly there.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from panels.hostdb.catalogue import HostEvent, UnknownEvent, decode
from panels.hostdb.control import CommandAnswer, answer_in
from sqlitekit.jsonload import load_json
from sqlitekit.txn import transaction


@dataclass(frozen=True)
class Logged:
    """An event as the log holds it: its id (the readers' cursor) and time."""

    id: int
    ts: float
    event: HostEvent


def append_events(
    conn: sqlite3.Connection,
    events: Sequence[tuple[float, HostEvent]],
    *,
    answer: CommandAnswer | None = None,
) -> list[int]:
    """Append `(ts, event)` pairs in one transaction; returns their ids. With `answer`, the
    command it names is marked finished in the same transaction: a viewer waiting on the
    command finds the events that report it already written."""
    if not events and answer is None:
        return []

    def work(c: sqlite3.Connection) -> list[int]:
        ids = []
        for ts, event in events:
            kind, panel, data = event.to_row()
            cursor = c.execute(
                "INSERT INTO events (ts, panel, kind, data) VALUES (?, ?, ?, ?)",
                (ts, panel, kind, json.dumps(data, sort_keys=True, default=str)),
            )
            ids.append(int(cursor.lastrowid or 0))
        if answer is not None:
            answer_in(c, answer)
        return ids

    return transaction(conn, work)


def logged_from_row(row: Sequence[Any]) -> Logged:
    """One `SELECT id, ts, panel, kind, data` row as a typed event (unreadable data: an
    `UnknownEvent`); every reader of the log, sync or async, goes through here."""
    ident, ts, panel, kind = int(row[0]), float(row[1]), row[2], str(row[3])
    try:
        data = load_json(row[4])
    except ValueError:
        return Logged(ident, ts, UnknownEvent(panel=panel, stored_kind=kind, why="data not JSON"))
    if not isinstance(data, dict):
        return Logged(ident, ts, UnknownEvent(panel=panel, stored_kind=kind, why="data not JSON"))
    return Logged(ident, ts, decode(kind, panel, data))


def read_events(
    conn: sqlite3.Connection,
    *,
    after: int = 0,
    panel: str | None = None,
    kinds: Sequence[str] | None = None,
    limit: int = 500,
) -> list[Logged]:
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
    return [logged_from_row(r) for r in conn.execute(sql, params)]


def last_events(
    conn: sqlite3.Connection,
    *,
    count: int,
    panel: str | None = None,
    kinds: Sequence[str] | None = None,
) -> list[Logged]:
    """The newest `count` events (of one panel, of some kinds, when given), oldest first."""
    sql = "SELECT id, ts, panel, kind, data FROM events"
    where: list[str] = []
    params: list[Any] = []
    if panel is not None:
        where.append("panel = ?")
        params.append(panel)
    if kinds:
        where.append(f"kind IN ({','.join('?' * len(kinds))})")
        params.extend(kinds)
    if where:
        sql += " WHERE " + " AND ".join(where)
    sql += " ORDER BY id DESC LIMIT ?"
    params.append(count)
    return [logged_from_row(r) for r in reversed(conn.execute(sql, params).fetchall())]


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

    return transaction(conn, work)
