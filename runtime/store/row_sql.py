"""SQL over the `window_rows` table: plain functions over a connection, run inside a transaction.

The caller (TurnStore) owns transactions; these functions never BEGIN or COMMIT, so several of
them compose into one atomic write (a turn's rows plus its input's status change).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence

from runtime.store.codec import (
    ROW_COLUMNS,
    decode_row,
    encode_blocks,
    encode_ids,
    new_row_values,
    row_values,
)
from runtime.window.rows import Block, NewRow, Row, RowStatus

_SELECT = f"SELECT {ROW_COLUMNS} FROM window_rows"


def select_rows(conn: sqlite3.Connection, *, after_id: int = 0) -> list[Row]:
    """Rows in window order (id ascending), in one query; `after_id` skips older rows."""
    cursor = conn.execute(f"{_SELECT} WHERE id > ? ORDER BY id", (after_id,))
    return [decode_row(values) for values in cursor]


def select_revisions(conn: sqlite3.Connection) -> list[tuple[int, int]]:
    """(id, revision) of every row in window order: what changed since a cached read."""
    return [
        (int(i), int(r)) for i, r in conn.execute("SELECT id, rev FROM window_rows ORDER BY id")
    ]


def revision_counter(conn: sqlite3.Connection) -> int:
    """The store-wide stamp counter: the revision the latest insert or change of a row got."""
    return int(conn.execute("SELECT n FROM row_revision").fetchone()[0])


def data_version(conn: sqlite3.Connection) -> int:
    """SQLite's counter of commits made by OTHER connections (any process) to the file, as
    seen by this connection's current read transaction; its own commits never change it."""
    return int(conn.execute("PRAGMA data_version").fetchone()[0])


def select_rows_by_id(conn: sqlite3.Connection, ids: Sequence[int]) -> dict[int, tuple[int, Row]]:
    """Full rows with their revision, for the given ids."""
    cursor = conn.execute(
        f"SELECT rev, {ROW_COLUMNS} FROM window_rows WHERE id IN (SELECT value FROM json_each(?))",
        (encode_ids(list(ids)),),
    )
    found: dict[int, tuple[int, Row]] = {}
    for values in cursor:
        row = decode_row(values[1:])
        found[row.id] = (int(values[0]), row)
    return found


def select_row(conn: sqlite3.Connection, row_id: int) -> Row | None:
    values = conn.execute(f"{_SELECT} WHERE id = ?", (row_id,)).fetchone()
    return decode_row(values) if values is not None else None


def insert_rows(
    conn: sqlite3.Connection, rows: Sequence[NewRow], *, ts: str, status: RowStatus
) -> list[int]:
    """Insert new rows; the ids are assigned by SQLite and never reused (AUTOINCREMENT)."""
    sql = (
        "INSERT INTO window_rows (ts, role, blocks, tokens, tokens_exact, pinned, label,"
        " status, consumed_ids, compressed) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
    )
    ids: list[int] = []
    for row in rows:
        cursor = conn.execute(sql, new_row_values(row, ts, status))
        assert cursor.lastrowid is not None
        ids.append(cursor.lastrowid)
    return ids


def insert_whole_rows(conn: sqlite3.Connection, rows: Iterable[Row]) -> int:
    """Insert rows with their own ids and timestamps (import, legacy conversion)."""
    sql = f"INSERT INTO window_rows ({ROW_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
    cursor = conn.executemany(sql, (row_values(row) for row in rows))
    return cursor.rowcount


def row_status(conn: sqlite3.Connection, row_id: int) -> RowStatus | None:
    found = conn.execute("SELECT status FROM window_rows WHERE id = ?", (row_id,)).fetchone()
    return found[0] if found is not None else None


def complete_row(
    conn: sqlite3.Connection, row_id: int, *, tokens: int | None, tokens_exact: bool
) -> None:
    if tokens is None:
        conn.execute("UPDATE window_rows SET status = 'complete' WHERE id = ?", (row_id,))
    else:
        conn.execute(
            "UPDATE window_rows SET status = 'complete', tokens = ?, tokens_exact = ? WHERE id = ?",
            (int(tokens), int(tokens_exact), row_id),
        )


def mark_interrupted(conn: sqlite3.Connection) -> list[int]:
    cursor = conn.execute(
        "UPDATE window_rows SET status = 'interrupted' WHERE status = 'in_flight' RETURNING id"
    )
    return sorted(int(values[0]) for values in cursor)


def delete_interrupted_inputs(
    conn: sqlite3.Connection, ids: Sequence[int], label: str = ""
) -> list[int]:
    """Delete the interrupted input rows that consumed any of the message `ids`, or that
    carry `label` when it is given (an input that consumes no message, such as the host's
    follow-up note, is known by its label): earlier tries of the same input, cut off or
    failed. Their row ids."""
    cursor = conn.execute(
        "DELETE FROM window_rows WHERE status = 'interrupted' AND role = 'user'"
        " AND (EXISTS (SELECT 1 FROM json_each(window_rows.consumed_ids)"
        "              WHERE value IN (SELECT value FROM json_each(?)))"
        "      OR (? != '' AND label = ?))"
        " RETURNING id",
        (encode_ids(list(ids)), label, label),
    )
    return sorted(int(values[0]) for values in cursor)


def delete_rows(conn: sqlite3.Connection, ids: Iterable[int]) -> int:
    """Delete the given rows in one statement; a turn's in-flight input is never deleted."""
    cursor = conn.execute(
        "DELETE FROM window_rows WHERE status != 'in_flight'"
        " AND id IN (SELECT value FROM json_each(?))",
        (encode_ids(list(ids)),),
    )
    return cursor.rowcount


def delete_all_rows(conn: sqlite3.Connection, *, keep_pinned: bool) -> int:
    where = "status != 'in_flight'" + (" AND pinned = 0" if keep_pinned else "")
    return conn.execute(f"DELETE FROM window_rows WHERE {where}").rowcount


def update_blocks(
    conn: sqlite3.Connection,
    row_id: int,
    blocks: Sequence[Block],
    tokens: int,
    *,
    tokens_exact: bool,
    compressed: bool | None,
) -> bool:
    if compressed is None:
        cursor = conn.execute(
            "UPDATE window_rows SET blocks = ?, tokens = ?, tokens_exact = ? WHERE id = ?",
            (encode_blocks(blocks), int(tokens), int(tokens_exact), row_id),
        )
    else:
        cursor = conn.execute(
            "UPDATE window_rows SET blocks = ?, tokens = ?, tokens_exact = ?, compressed = ?"
            " WHERE id = ?",
            (encode_blocks(blocks), int(tokens), int(tokens_exact), int(compressed), row_id),
        )
    return cursor.rowcount == 1


def update_pinned(conn: sqlite3.Connection, row_id: int, pinned: bool) -> bool:
    cursor = conn.execute("UPDATE window_rows SET pinned = ? WHERE id = ?", (int(pinned), row_id))
    return cursor.rowcount == 1


def update_label(conn: sqlite3.Connection, row_id: int, label: str) -> bool:
    cursor = conn.execute("UPDATE window_rows SET label = ? WHERE id = ?", (label, row_id))
    return cursor.rowcount == 1


def select_consumed_ids(conn: sqlite3.Connection) -> set[int]:
    """Bus message ids recorded on complete rows; an unanswered input's ids do not count."""
    cursor = conn.execute(
        "SELECT DISTINCT j.value FROM window_rows AS r, json_each(r.consumed_ids) AS j"
        " WHERE r.status = 'complete'"
    )
    return {int(values[0]) for values in cursor}


def last_row_id(conn: sqlite3.Connection) -> int:
    """The highest id ever handed out (deleted rows included), 0 for a fresh store."""
    found = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'window_rows'").fetchone()
    return int(found[0]) if found is not None else 0


def raise_last_row_id(conn: sqlite3.Connection, value: int) -> None:
    """Make sure new ids start above `value`, so markers and imported ids stay unambiguous."""
    if value <= last_row_id(conn):
        return
    updated = conn.execute(
        "UPDATE sqlite_sequence SET seq = ? WHERE name = 'window_rows'", (value,)
    ).rowcount
    if not updated:
        conn.execute("INSERT INTO sqlite_sequence (name, seq) VALUES ('window_rows', ?)", (value,))
