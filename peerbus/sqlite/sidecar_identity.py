"""Which `returns` table a compatibility sidecar belongs to, and restarting it for a new one.

The foreign schema is never touched, so the sidecar keeps the table's stamp in its own
peerbus_meta: the file's inode, its birth time where the platform reports one (Linux's
st_ctime changes at every write, so it is not used), and the highest id seen. A table
dropped and made again at the same path no longer matches: its receipts and watermarks are
set aside and delivery restarts from its first row, so no row of the new table is hidden.
"""

from __future__ import annotations

import json
import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from peerbus.sqlite import schema

# Which table a sidecar belongs to. The foreign schema is never touched, so the sidecar
# keeps the table's stamp in its own peerbus_meta: the file's inode, its birth time where
# the platform reports one, and the highest id seen. Its random id is `bus_id`, made anew
# when delivery restarts, so a consumer that keeps ids beside the identity sees a new bus.
_STAMP_KEYS = ("table_inode", "table_birth", "max_id_seen")


@dataclass(frozen=True)
class TableStamp:
    """What tells one `returns` table from another made later at the same path."""

    inode: int
    # st_birthtime (macOS, BSD). Linux on Python 3.11 has none, and st_ctime cannot stand
    # in: it moves at every write, so it would see a new table after every commit.
    birth: float | None
    # max(id), or the AUTOINCREMENT counter when higher: dropping the table resets both.
    high_id: int


def table_stamp(conn: sqlite3.Connection, path: Path) -> TableStamp:
    st = os.stat(path)
    top = int(conn.execute("SELECT coalesce(max(id), 0) FROM main.returns").fetchone()[0])
    if schema.table_exists(conn, "main", "sqlite_sequence"):
        row = conn.execute("SELECT seq FROM main.sqlite_sequence WHERE name = 'returns'").fetchone()
        top = max(top, int(row[0] or 0) if row else 0)
    birth = getattr(st, "st_birthtime", None)
    return TableStamp(st.st_ino, None if birth is None else float(birth), top)


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
    inode = recorded.get("table_inode")
    if inode is not None and int(inode) != stamp.inode:
        return f"the file was replaced: inode {stamp.inode}, recorded {inode}"
    birth = recorded.get("table_birth")
    if birth is not None and stamp.birth is not None and float(birth) != stamp.birth:
        return f"the file was made again: born {stamp.birth}, recorded {birth}"
    if known > stamp.high_id:
        return (
            f"the table was made again: its highest id is {stamp.high_id}, "
            f"below id {known} already seen"
        )
    return None


def mismatch(conn: sqlite3.Connection, stamp: TableStamp) -> str | None:
    recorded = recorded_stamp(conn)
    return judge(recorded, stamp, _highest_known(conn, recorded))


def restart_or_record(conn: sqlite3.Connection, path: Path) -> str | None:
    """Under the write lock: restart delivery when the sidecar belongs to another table,
    then record this table's stamp. Returns why it restarted, or None."""
    stamp = table_stamp(conn, path)
    reason = mismatch(conn, stamp)
    if reason is not None:
        _set_aside(conn, reason)
    values = {"table_inode": str(stamp.inode), "max_id_seen": str(stamp.high_id)}
    if stamp.birth is not None:
        values["table_birth"] = repr(stamp.birth)
    conn.executemany(
        "INSERT OR REPLACE INTO side.peerbus_meta (key, value) VALUES (?, ?)", values.items()
    )
    return reason


def _set_aside(conn: sqlite3.Connection, reason: str) -> None:
    """Forget the old table's delivery state; keep what it was in `last_restart`.

    Receipts, watermarks, queued status writes and sent keys all name the old table's ids,
    which the new table hands out again: any of them kept would hide or mark a new row.
    Epochs stay (they only go up). A new bus_id tells consumers their remembered ids are void.
    """
    dropped = int(conn.execute("SELECT count(*) FROM side.peerbus_receipts").fetchone()[0])
    old_id = schema.read_bus_id(conn, "side")
    conn.execute("DELETE FROM side.peerbus_receipts")
    conn.execute("UPDATE side.peerbus_recipients SET watermark = 0")
    conn.execute("DELETE FROM side.peerbus_status_outbox")
    conn.execute("DELETE FROM side.peerbus_sent")
    conn.execute("DELETE FROM side.peerbus_meta WHERE key IN ('bus_id', 'max_id_seen')")
    schema.ensure_bus_id(conn, "side")
    record = {"reason": reason, "previous_bus_id": old_id, "receipts_dropped": dropped}
    conn.execute(
        "INSERT OR REPLACE INTO side.peerbus_meta (key, value) VALUES ('last_restart', ?)",
        (json.dumps(record),),
    )
