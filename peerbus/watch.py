"""Noticing that the bus changed, without a 30 s poll and without burning a core.

Three sources, cheapest first:
- in-process: the Bus bumps its generation itself when its own connection submits, nacks
  or retries (SQLite's data_version never counts a connection's own commits);
- file signatures: a commit from any process appends to the `-wal` file (or rewrites the
  database file in rollback-journal mode), so `os.stat` of those files changes. A stat is a
  microsecond syscall that needs no SQLite lock and no thread hop, so it can run every few
  milliseconds in the event loop;
- `PRAGMA data_version`, asked every `backstop_interval` through the connection's thread,
  catches what a stat can miss (two commits in one mtime tick that leave the size equal
  after a WAL reset).
A false alarm costs one read-only pre-check in the next claim; a missed change costs at
most one backstop interval.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

Signature = tuple[int, ...]


def watched_paths(db: Path, sidecar: Path | None) -> tuple[Path, ...]:
    """The files whose metadata moves when the bus (or its sidecar) gets a commit."""
    paths = [db, db.with_name(db.name + "-wal")]
    if sidecar is not None:
        paths += [sidecar, sidecar.with_name(sidecar.name + "-wal")]
    return tuple(paths)


def file_signature(paths: tuple[Path, ...]) -> Signature:
    """Inode, size and mtime (ns) of each path; zeros for a path that does not exist."""
    sig: list[int] = []
    for path in paths:
        try:
            st = os.stat(path)
        except OSError:
            sig += (0, 0, 0)
        else:
            sig += (st.st_ino, st.st_size, st.st_mtime_ns)
    return tuple(sig)


def data_versions(conn: sqlite3.Connection, schemas: tuple[str, ...]) -> Signature:
    """PRAGMA data_version of each schema: changes when another connection commits."""
    return tuple(int(conn.execute(f"PRAGMA {s}.data_version").fetchone()[0]) for s in schemas)
