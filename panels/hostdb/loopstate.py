"""The team-loop graph's state in host.sqlite (`loop_state`), so a restart continues it.

Rows are opaque to this module: (kind, key, data), where the host's graph
(panels/host/loops/state.py) says what a kind is and encodes each key and value as JSON text.
Each write stamps its rows with the next `seq`, so the newest rows are the last written;
`save_loop_rows` keeps at most `keep` rows of each kind, pruning the oldest, so the table
cannot grow past the graph's own memory bound. Sync functions over a connection; the host
calls them through `HostDb` (db.py).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass

from sqlitekit.txn import transaction


@dataclass(frozen=True)
class LoopRow:
    kind: str
    key: str
    data: str


def save_loop_rows(
    conn: sqlite3.Connection,
    rows: Sequence[LoopRow],
    dropped: Sequence[tuple[str, str]] = (),
    *,
    keep: int,
) -> int:
    """Write `rows` (oldest first) and delete `dropped` (kind, key) in one transaction, then
    prune each kind to its newest `keep` rows; returns the rows pruned."""

    def work(c: sqlite3.Connection) -> int:
        (top,) = c.execute("SELECT COALESCE(MAX(seq), 0) FROM loop_state").fetchone()
        c.executemany(
            "INSERT INTO loop_state (kind, key, seq, data) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (kind, key) DO UPDATE SET seq = excluded.seq, data = excluded.data",
            [(r.kind, r.key, top + n, r.data) for n, r in enumerate(rows, 1)],
        )
        c.executemany("DELETE FROM loop_state WHERE kind = ? AND key = ?", dropped)
        pruned = 0
        for (kind,) in c.execute("SELECT DISTINCT kind FROM loop_state").fetchall():
            pruned += c.execute(
                "DELETE FROM loop_state WHERE kind = ? AND seq <= (SELECT seq FROM loop_state "
                "WHERE kind = ? ORDER BY seq DESC LIMIT 1 OFFSET ?)",
                (kind, kind, keep),
            ).rowcount
        return pruned

    return transaction(conn, work)


def load_loop_rows(conn: sqlite3.Connection) -> list[LoopRow]:
    """Every row, oldest written first."""
    found = conn.execute("SELECT kind, key, data FROM loop_state ORDER BY seq").fetchall()
    return [LoopRow(kind, key, data) for kind, key, data in found]


def count_loop_rows(conn: sqlite3.Connection) -> dict[str, int]:
    """How many rows of each kind the table holds."""
    found = conn.execute("SELECT kind, COUNT(*) FROM loop_state GROUP BY kind").fetchall()
    return {kind: int(n) for kind, n in found}
