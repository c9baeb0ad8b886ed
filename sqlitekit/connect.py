"""Opening a SQLite file the way every store of ours does: autocommit, a busy timeout, WAL.

Autocommit (`isolation_level=None`): the sqlite3 module then never opens a deferred
transaction behind our back; every transaction is begun by `txn.py`, writes with
BEGIN IMMEDIATE. `check_same_thread=False`: each owner runs its calls on some worker thread,
one at a time (a CapacityLimiter(1)), so a connection is never used by two threads at once.

What differs between the files is left to their owners: the synchronous level (the turn
store FULL, host.sqlite NORMAL, the bus per transaction), whether WAL may be set at all (the
bus leaves a foreign file's journal mode alone), and how an error reads.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path


def connect(path: Path, *, busy_timeout: float, read_only: bool = False) -> sqlite3.Connection:
    """Open `path` in autocommit mode; SQLite waits up to `busy_timeout` seconds for a lock.

    `read_only`: the file is opened with `mode=ro` (never created) and the connection
    refuses writes (`query_only`), so nothing can write through it.
    """
    if not read_only:
        return sqlite3.connect(
            str(path), timeout=busy_timeout, isolation_level=None, check_same_thread=False
        )
    conn = sqlite3.connect(
        f"{path.resolve().as_uri()}?mode=ro",
        uri=True,
        timeout=busy_timeout,
        isolation_level=None,
        check_same_thread=False,
    )
    try:
        conn.execute("PRAGMA query_only = ON")
    except BaseException:
        conn.close()
        raise
    return conn


def use_wal(conn: sqlite3.Connection, schema: str | None = None) -> str:
    """Ask for WAL, so readers never block the writer; the journal mode the file now has.

    Without `schema` the pragma names none, and so applies to every attached database."""
    where = "" if schema is None else f"{schema}."
    return str(conn.execute(f"PRAGMA {where}journal_mode = WAL").fetchone()[0])
