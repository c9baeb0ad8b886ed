"""`host.sqlite`: the event log (host -> viewers), control table (viewers -> host), panel status.

One file per team, next to its bus. WAL, so viewers (`mnemara logs -f`, `ps`, the dashboard)
read beside the host's writes; every write is one `BEGIN IMMEDIATE` transaction
(`sqlitekit.txn.transaction`, run once: no retry past busy_timeout), so two writers queue on
the lock instead of failing half way. The host notices rows written by other processes
through `PRAGMA data_version` (it changes only for other connections' commits).

    events    id AUTOINCREMENT (never reused, so a tail's cursor stays valid after pruning),
              ts, panel (NULL: the host itself), kind, data (JSON object)
    commands  id AUTOINCREMENT, ts, panel, verb, args (JSON), state pending|done|failed,
              outcome (text), done_ts, by (who gave it: operator, a watchdog panel...)
    panels    name PK, kind, state, detail, turns, input/output tokens, usd, epoch, inbox,
              updated_ts, dead_letters, and (v4) window_tokens, token_cap, budget_usd,
              waiting, position (in the team file), label (display_name), and (v5)
              sandbox (whether its tools run confined): the latest status of each
              panel, rewritten in place (for `ps` and the dashboard)
    meta      key PK, value: the host's pid, team, bus, start time, the team's budget, and
              `sandbox`, what confines the panels' tools (why not, and what to do)
    loop_state  (v6) kind, key (PK together), seq, data (JSON): the team-loop graph's
              messages, turns and edge rate windows (loopstate.py), so a restarted host
              continues its chains; each kind pruned to the graph's memory bound
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from panels.errors import HostDbError as HostDbError  # defined there, re-exported here
from sqlitekit.connect import connect as open_connection
from sqlitekit.connect import use_wal
from sqlitekit.txn import transaction

SCHEMA_VERSION = 6

_DDL = (
    """CREATE TABLE IF NOT EXISTS events (
           id INTEGER PRIMARY KEY AUTOINCREMENT,
           ts REAL NOT NULL,
           panel TEXT,
           kind TEXT NOT NULL,
           data TEXT NOT NULL DEFAULT '{}')""",
    "CREATE INDEX IF NOT EXISTS events_by_panel ON events (panel, id)",
    """CREATE TABLE IF NOT EXISTS commands (
           id INTEGER PRIMARY KEY AUTOINCREMENT,
           ts REAL NOT NULL,
           panel TEXT,
           verb TEXT NOT NULL,
           args TEXT NOT NULL DEFAULT '{}',
           state TEXT NOT NULL DEFAULT 'pending',
           outcome TEXT,
           done_ts REAL)""",
    "CREATE INDEX IF NOT EXISTS commands_pending ON commands (id) WHERE state = 'pending'",
    """CREATE TABLE IF NOT EXISTS panels (
           name TEXT PRIMARY KEY,
           kind TEXT NOT NULL,
           state TEXT NOT NULL,
           detail TEXT NOT NULL DEFAULT '',
           turns INTEGER NOT NULL DEFAULT 0,
           input_tokens INTEGER NOT NULL DEFAULT 0,
           output_tokens INTEGER NOT NULL DEFAULT 0,
           usd REAL NOT NULL DEFAULT 0,
           epoch INTEGER NOT NULL DEFAULT 0,
           inbox INTEGER NOT NULL DEFAULT 1,
           model TEXT NOT NULL DEFAULT '',
           updated_ts REAL NOT NULL)""",
    "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
)
# Each version's statements, applied in order from the file's version up.
MIGRATION_STEPS: dict[int, tuple[str, ...]] = {
    1: _DDL,
    2: ("ALTER TABLE commands ADD COLUMN by TEXT NOT NULL DEFAULT 'operator'",),
    3: ("ALTER TABLE panels ADD COLUMN dead_letters INTEGER NOT NULL DEFAULT 0",),
    4: (
        "ALTER TABLE panels ADD COLUMN window_tokens INTEGER NOT NULL DEFAULT 0",
        "ALTER TABLE panels ADD COLUMN token_cap INTEGER NOT NULL DEFAULT 0",
        "ALTER TABLE panels ADD COLUMN budget_usd REAL NOT NULL DEFAULT 0",
        "ALTER TABLE panels ADD COLUMN waiting INTEGER NOT NULL DEFAULT 0",
        "ALTER TABLE panels ADD COLUMN position INTEGER NOT NULL DEFAULT 0",
        "ALTER TABLE panels ADD COLUMN label TEXT NOT NULL DEFAULT ''",
    ),
    5: ("ALTER TABLE panels ADD COLUMN sandbox TEXT NOT NULL DEFAULT ''",),
    6: (
        """CREATE TABLE IF NOT EXISTS loop_state (
               kind TEXT NOT NULL,
               key TEXT NOT NULL,
               seq INTEGER NOT NULL,
               data TEXT NOT NULL,
               PRIMARY KEY (kind, key))""",
        "CREATE INDEX IF NOT EXISTS loop_state_by_age ON loop_state (kind, seq)",
    ),
}


def connect(path: Path, *, busy_timeout: float = 5.0, create: bool = True) -> sqlite3.Connection:
    """Open (and, with `create`, make or migrate) the host database at `path`."""
    if not create and not path.is_file():
        raise HostDbError("no host database here; has the team been started (`mnemara up`)?",
                          path=path)  # fmt: skip
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = open_connection(path, busy_timeout=busy_timeout)
    try:
        use_wal(conn)
        conn.execute("PRAGMA synchronous = NORMAL")
        version = int(conn.execute("PRAGMA user_version").fetchone()[0])
        if version > SCHEMA_VERSION:
            raise HostDbError(
                f"schema version {version} is newer than this mnemara knows ({SCHEMA_VERSION}); "
                "upgrade mnemara",
                path=path,
            )
        if version < SCHEMA_VERSION:
            transaction(conn, _migrate)
    except sqlite3.DatabaseError as exc:
        conn.close()
        raise HostDbError(f"not a usable SQLite database ({exc})", path=path) from exc
    except BaseException:
        conn.close()
        raise
    return conn


def _migrate(conn: sqlite3.Connection) -> None:
    # Read again inside the write transaction: another process may have migrated meanwhile.
    version = int(conn.execute("PRAGMA user_version").fetchone()[0])
    for step in range(version + 1, SCHEMA_VERSION + 1):
        for statement in MIGRATION_STEPS[step]:
            conn.execute(statement)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")


def data_version(conn: sqlite3.Connection) -> int:
    """Changes when another connection commits to the file (never for our own commits)."""
    return int(conn.execute("PRAGMA data_version").fetchone()[0])
