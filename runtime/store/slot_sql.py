"""SQL over slots, markers and meta: the store's small side tables.

Slot positions are kept dense (0..n-1) and in the order the caller asked for. Reordering is a
pure function over the list of labels; the SQL then writes the positions that changed, which
avoids fighting a UNIQUE(position) constraint in the middle of a shift.
"""

from __future__ import annotations

import sqlite3

from runtime.store.codec import MARKER_COLUMNS, SLOT_COLUMNS, decode_marker, decode_slot
from runtime.window.rows import Marker, Slot


def place(labels: list[str], label: str, position: int | None) -> list[str]:
    """`labels` with `label` moved (or added) at `position`, clamped; None means the end."""
    order = [existing for existing in labels if existing != label]
    index = len(order) if position is None else max(0, min(position, len(order)))
    order.insert(index, label)
    return order


def select_slots(conn: sqlite3.Connection) -> list[Slot]:
    cursor = conn.execute(f"SELECT {SLOT_COLUMNS} FROM slots ORDER BY position, label")
    return [decode_slot(values) for values in cursor]


def select_slot(conn: sqlite3.Connection, label: str) -> Slot | None:
    values = conn.execute(f"SELECT {SLOT_COLUMNS} FROM slots WHERE label = ?", (label,)).fetchone()
    return decode_slot(values) if values is not None else None


def write_order(conn: sqlite3.Connection, order: list[str]) -> None:
    """Give each slot its index in `order` as its position, touching only the ones that moved."""
    current = dict(conn.execute("SELECT label, position FROM slots").fetchall())
    for position, label in enumerate(order):
        if current.get(label) != position:
            conn.execute("UPDATE slots SET position = ? WHERE label = ?", (position, label))


def upsert_slot(
    conn: sqlite3.Connection,
    label: str,
    role: str,
    content: str,
    position: int | None,
    *,
    ts: str,
) -> Slot:
    labels = [slot.label for slot in select_slots(conn)]
    if label in labels:
        conn.execute(
            "UPDATE slots SET role = ?, content = ?, updated_at = ? WHERE label = ?",
            (role, content, ts, label),
        )
        if position is not None:
            write_order(conn, place(labels, label, position))
    else:
        conn.execute(
            f"INSERT INTO slots ({SLOT_COLUMNS}) VALUES (?, ?, ?, ?, ?)",
            (label, role, content, len(labels), ts),
        )
        write_order(conn, place(labels, label, position))
    slot = select_slot(conn, label)
    assert slot is not None
    return slot


def move_slot(conn: sqlite3.Connection, label: str, position: int) -> Slot | None:
    labels = [slot.label for slot in select_slots(conn)]
    if label not in labels:
        return None
    write_order(conn, place(labels, label, position))
    return select_slot(conn, label)


def delete_slot(conn: sqlite3.Connection, label: str) -> bool:
    deleted = conn.execute("DELETE FROM slots WHERE label = ?", (label,)).rowcount == 1
    if deleted:
        write_order(conn, [slot.label for slot in select_slots(conn)])
    return deleted


def delete_all_slots(conn: sqlite3.Connection) -> int:
    return conn.execute("DELETE FROM slots").rowcount


def insert_slots(conn: sqlite3.Connection, slots: list[Slot]) -> None:
    conn.executemany(
        f"INSERT INTO slots ({SLOT_COLUMNS}) VALUES (?, ?, ?, ?, ?)",
        [(s.label, s.role, s.content, s.position, s.updated_at) for s in slots],
    )


def mark_segment(conn: sqlite3.Connection, name: str, *, ts: str) -> Marker:
    """Mark the point after the current last row; marking an existing name moves it."""
    (after,) = conn.execute("SELECT COALESCE(MAX(id), 0) FROM window_rows").fetchone()
    conn.execute(
        f"INSERT OR REPLACE INTO markers ({MARKER_COLUMNS}) VALUES (?, ?, ?)", (name, after, ts)
    )
    return Marker(name=name, after_row_id=int(after), ts=ts)


def select_markers(conn: sqlite3.Connection) -> list[Marker]:
    cursor = conn.execute(f"SELECT {MARKER_COLUMNS} FROM markers ORDER BY after_row_id, ts, name")
    return [decode_marker(values) for values in cursor]


def select_marker(conn: sqlite3.Connection, name: str) -> Marker | None:
    values = conn.execute(
        f"SELECT {MARKER_COLUMNS} FROM markers WHERE name = ?", (name,)
    ).fetchone()
    return decode_marker(values) if values is not None else None


def insert_markers(conn: sqlite3.Connection, markers: list[Marker]) -> None:
    conn.executemany(
        f"INSERT INTO markers ({MARKER_COLUMNS}) VALUES (?, ?, ?)",
        [(m.name, m.after_row_id, m.ts) for m in markers],
    )


def get_meta(conn: sqlite3.Connection, key: str) -> str | None:
    found = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return str(found[0]) if found is not None else None


def set_meta(conn: sqlite3.Connection, key: str, value: str) -> None:
    conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, value))


def select_meta(conn: sqlite3.Connection) -> dict[str, str]:
    return {str(k): str(v) for k, v in conn.execute("SELECT key, value FROM meta ORDER BY key")}
