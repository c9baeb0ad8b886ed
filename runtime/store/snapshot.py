"""A whole store as one value (`StoreSnapshot`), and the SQL that reads and restores it.

Export writes a snapshot out and import reads one back, so "export then import reproduces the
store" means: the two snapshots are equal, ids, timestamps and the id sequence included.

The delivery tables (`delivered`, `outbox`) are left out on purpose and a restore leaves them
as they are: they record what one host took from and sent to its bus, which means nothing to
a copy of the conversation loaded elsewhere, and wiping them would let acked messages run again.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

from runtime.errors import StoreError
from runtime.store import row_sql, slot_sql
from runtime.window.rows import Marker, Row, Slot


@dataclass(frozen=True)
class StoreSnapshot:
    """Every row, slot, marker and meta entry of a store, and its id sequence."""

    rows: tuple[Row, ...] = ()
    slots: tuple[Slot, ...] = ()
    markers: tuple[Marker, ...] = ()
    meta: dict[str, str] = field(default_factory=dict)
    # The highest row id ever handed out, so ids deleted before the export are not reused.
    last_row_id: int = 0

    @property
    def is_empty(self) -> bool:
        return not (self.rows or self.slots or self.markers)


def read_snapshot(conn: sqlite3.Connection) -> StoreSnapshot:
    return StoreSnapshot(
        rows=tuple(row_sql.select_rows(conn)),
        slots=tuple(slot_sql.select_slots(conn)),
        markers=tuple(slot_sql.select_markers(conn)),
        meta=slot_sql.select_meta(conn),
        last_row_id=row_sql.last_row_id(conn),
    )


def write_snapshot(
    conn: sqlite3.Connection, snapshot: StoreSnapshot, *, replace: bool, path: Path
) -> None:
    """Load `snapshot` into the store; the caller's transaction makes it all or nothing."""
    current = read_snapshot(conn)
    if not current.is_empty and not replace:
        raise StoreError(
            f"{path} already holds {len(current.rows)} rows, {len(current.slots)} slots and "
            f"{len(current.markers)} markers; import into an empty instance, or replace its "
            "contents explicitly (`mnemara import --replace`). Nothing was changed.",
            path=path,
        )
    conn.execute("DELETE FROM window_rows")
    conn.execute("DELETE FROM slots")
    conn.execute("DELETE FROM markers")
    conn.execute("DELETE FROM meta")
    row_sql.insert_whole_rows(conn, snapshot.rows)
    slot_sql.insert_slots(conn, list(snapshot.slots))
    slot_sql.insert_markers(conn, list(snapshot.markers))
    for key, value in snapshot.meta.items():
        slot_sql.set_meta(conn, key, value)
    # Set the id sequence to exactly the exported value (AUTOINCREMENT may have raised it to
    # the highest imported id; the export's value is never lower than that).
    highest = max((row.id for row in snapshot.rows), default=0)
    conn.execute("DELETE FROM sqlite_sequence WHERE name = 'window_rows'")
    row_sql.raise_last_row_id(conn, max(snapshot.last_row_id, highest))
