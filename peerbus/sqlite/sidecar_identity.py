"""Which `returns` table a compatibility sidecar belongs to, and restarting it for a new one.

The identity is a random mark planted in two places: the sidecar's peerbus_meta holds it
(`table_mark`), and the table's own file holds a trigger on `returns` named after it
(`peerbus_mark_<hex>`; `WHEN 0`, so it never fires and the table behaves as before for
every reader and writer, the original mnemara included). A trigger lives and dies with its
table: a table dropped and made again in the same file, or a file replaced by another, has
no trigger of that name, whatever its inode (ext4 reuses them), birth time (Linux reports
none) or ids say. A mark the sidecar records and the table lacks means another table: its
receipts and watermarks are set aside and delivery restarts from its first row, so no row of
the new table is hidden. The old check stays beside it: ids the sidecar refers to above the
table's highest id (a file restored from an older copy keeps the mark) also restart it.

Checked at open, and on every claim and submit of an open bus (`current_mark`, one indexed
read of the schema table), so a table made again while a host runs is noticed at its next
wake. A sidecar from before marks (or a new one) gets its mark at open.
"""

from __future__ import annotations

import json
import sqlite3
import uuid
from dataclasses import dataclass

from peerbus.sqlite import schema

MARK_PREFIX = "peerbus_mark_"
_STAMP_KEYS = ("table_mark", "max_id_seen")
# What sidecars before marks recorded (inode and birth time, which cannot tell two tables
# apart): removed when the mark is planted.
_OLD_KEYS = ("table_inode", "table_birth")


@dataclass(frozen=True)
class TableStamp:
    """What tells one `returns` table from another made later at the same path."""

    # The marks planted on this table (by this sidecar and by any other one).
    marks: frozenset[str]
    # max(id), or the AUTOINCREMENT counter when higher: dropping the table resets both.
    high_id: int


def trigger_name(mark: str) -> str:
    return MARK_PREFIX + mark


def table_stamp(conn: sqlite3.Connection) -> TableStamp:
    names = conn.execute(
        """SELECT name FROM main.sqlite_master
            WHERE type = 'trigger' AND tbl_name = 'returns' AND substr(name, 1, ?) = ?""",
        (len(MARK_PREFIX), MARK_PREFIX),
    )
    marks = frozenset(str(n)[len(MARK_PREFIX) :] for (n,) in names)
    top = int(conn.execute("SELECT coalesce(max(id), 0) FROM main.returns").fetchone()[0])
    if schema.table_exists(conn, "main", "sqlite_sequence"):
        row = conn.execute("SELECT seq FROM main.sqlite_sequence WHERE name = 'returns'").fetchone()
        top = max(top, int(row[0] or 0) if row else 0)
    return TableStamp(marks, top)


def recorded_stamp(conn: sqlite3.Connection) -> dict[str, str]:
    marks = ",".join("?" * len(_STAMP_KEYS))
    rows = conn.execute(
        f"SELECT key, value FROM side.peerbus_meta WHERE key IN ({marks})", _STAMP_KEYS
    )
    return {str(k): str(v) for k, v in rows}


def _highest_known(conn: sqlite3.Connection, recorded: dict[str, str]) -> int:
    """The highest message id the sidecar's state refers to."""
    row = conn.execute(
        """SELECT max(coalesce((SELECT max(message_id) FROM side.peerbus_receipts), 0),
                      coalesce((SELECT max(watermark) FROM side.peerbus_recipients), 0),
                      coalesce((SELECT max(message_id) FROM side.peerbus_sent), 0))"""
    ).fetchone()
    return max(int(row[0]), int(recorded.get("max_id_seen", "0")))


def judge(recorded: dict[str, str], stamp: TableStamp, known: int) -> str | None:
    """Why the sidecar's state belongs to another table, or None when it is this one's."""
    mark = recorded.get("table_mark")
    if mark is not None and mark not in stamp.marks:
        return (
            f"the table's identity mark {trigger_name(mark)} is gone: the table was made "
            "again or its file replaced"
        )
    if known > stamp.high_id:
        return (
            f"the table was made again: its highest id is {stamp.high_id}, "
            f"below id {known} already seen"
        )
    return None


def mismatch(conn: sqlite3.Connection, stamp: TableStamp) -> str | None:
    recorded = recorded_stamp(conn)
    return judge(recorded, stamp, _highest_known(conn, recorded))


def current_mark(conn: sqlite3.Connection) -> tuple[str | None, bool, str | None]:
    """(the sidecar's mark, whether the table has it, the sidecar's bus identity): what an
    open bus compares with what it knew, on every wake. One read, no write lock."""
    row = conn.execute("SELECT value FROM side.peerbus_meta WHERE key = 'table_mark'").fetchone()
    mark = None if row is None else str(row[0])
    present = mark is not None and (
        conn.execute(
            "SELECT 1 FROM main.sqlite_master WHERE type = 'trigger' AND name = ?",
            (trigger_name(mark),),
        ).fetchone()
        is not None
    )
    return mark, present, schema.read_bus_id(conn, "side")


def plant_mark(conn: sqlite3.Connection) -> str:
    """Under the write lock, in the table's file alone: a new mark on the table.

    Its own transaction, before the sidecar records it: SQLite cannot commit a WAL sidecar
    and the table's file atomically, and a mark recorded without its trigger would look
    like a new table at the next open. A trigger whose record was lost is harmless."""
    mark = uuid.uuid4().hex
    conn.execute(
        f'CREATE TRIGGER main."{trigger_name(mark)}" AFTER DELETE ON returns '
        "WHEN 0 BEGIN SELECT 0; END"
    )
    return mark


def restart_or_record(conn: sqlite3.Connection, planted: str) -> str | None:
    """Under the write lock, in the sidecar: restart delivery when the sidecar belongs to
    another table, then record the mark `planted` on this one and the highest id. Returns
    why it restarted, or None."""
    stamp = table_stamp(conn)
    reason = mismatch(conn, stamp)
    if reason is not None:
        _set_aside(conn, reason)
    values = {"table_mark": planted, "max_id_seen": str(stamp.high_id)}
    conn.executemany(
        "INSERT OR REPLACE INTO side.peerbus_meta (key, value) VALUES (?, ?)", values.items()
    )
    marks = ",".join("?" * len(_OLD_KEYS))
    conn.execute(f"DELETE FROM side.peerbus_meta WHERE key IN ({marks})", _OLD_KEYS)
    return reason


EARLIER_KEPT = 32  # earlier identities of a table made again that are remembered


def earlier_identities(conn: sqlite3.Connection) -> tuple[str, ...]:
    """The identities the table at this place had before it was made again, oldest first:
    a turn store's sends of turns fed from one of them are still this bus's to publish."""
    row = conn.execute(
        "SELECT value FROM side.peerbus_meta WHERE key = 'earlier_bus_ids'"
    ).fetchone()
    if row is None:
        return ()
    try:
        found = json.loads(row[0])
    except ValueError:
        return ()
    return tuple(str(i) for i in found) if isinstance(found, list) else ()


def _set_aside(conn: sqlite3.Connection, reason: str) -> None:
    """Forget the old table's delivery state; keep what it was in `last_restart`.

    Receipts, watermarks, queued status writes, sent keys and our own rows all name the old
    table's ids, which the new table hands out again: any of them kept would hide or mark a
    new row. Epochs stay (they only go up). A new bus_id tells consumers their remembered
    ids are void.
    """
    dropped = int(conn.execute("SELECT count(*) FROM side.peerbus_receipts").fetchone()[0])
    old_id = schema.read_bus_id(conn, "side")
    conn.execute("DELETE FROM side.peerbus_receipts")
    conn.execute("UPDATE side.peerbus_recipients SET watermark = 0")
    conn.execute("DELETE FROM side.peerbus_status_outbox")
    conn.execute("DELETE FROM side.peerbus_sent")
    conn.execute("DELETE FROM side.peerbus_own")
    conn.execute(
        "DELETE FROM side.peerbus_meta WHERE key IN ('bus_id', 'max_id_seen', 'table_mark')"
    )
    schema.ensure_bus_id(conn, "side")
    if old_id is not None:
        earlier = [i for i in earlier_identities(conn) if i != old_id][-(EARLIER_KEPT - 1) :]
        conn.execute(
            "INSERT OR REPLACE INTO side.peerbus_meta (key, value) VALUES ('earlier_bus_ids', ?)",
            (json.dumps([*earlier, old_id]),),
        )
    record = {"reason": reason, "previous_bus_id": old_id, "receipts_dropped": dropped}
    conn.execute(
        "INSERT OR REPLACE INTO side.peerbus_meta (key, value) VALUES ('last_restart', ?)",
        (json.dumps(record),),
    )
