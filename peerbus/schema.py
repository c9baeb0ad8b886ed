"""The `returns` table's contract, peerbus's additions, and the versioned migrations.

The seven contract columns are the original README's, and a bus file created here starts
from exactly that table, so a created file and an adopted one end up alike. Migrations only
add (ALTER TABLE ... ADD COLUMN, new tables, new indexes): the table is never rebuilt, so
AUTOINCREMENT and its `sqlite_sequence` row survive, and no id is ever handed out twice.

The delivery state lives in three `peerbus_*` tables, in the bus file when peerbus owns it,
or in a sidecar file (attached as `side`) when the bus file is foreign:
- `peerbus_receipts`: one row per (message, recipient): lease, claim token, attempts, epoch,
  done / failed, so a broadcast is delivered to and acked by every recipient on its own;
- `peerbus_recipients`: each recipient's epoch, sender filter, noise count and watermark;
- `peerbus_meta`: marks the file as peerbus's.
`PRAGMA user_version` counts the migrations applied to that file.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from peerbus.errors import ForeignSchemaError, SchemaTooNewError

CONTRACT_COLUMNS = (
    "id",
    "agent_role",
    "recipient_role",
    "task_id",
    "payload_json",
    "status",
    "submitted_at",
)

# The table as the original README gives it; used as is to create a new bus file.
CONTRACT_DDL = """
CREATE TABLE returns (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    agent_role TEXT,
    recipient_role TEXT,
    task_id TEXT,
    payload_json TEXT,
    status TEXT DEFAULT 'pending',
    submitted_at TEXT
)
"""


def state_tables(schema: str) -> tuple[str, ...]:
    """DDL of the delivery-state tables, in schema `main` or `side`."""
    return (
        f"""CREATE TABLE {schema}.peerbus_receipts (
            message_id INTEGER NOT NULL,
            recipient TEXT NOT NULL,
            state TEXT NOT NULL CHECK (state IN ('leased', 'waiting', 'done', 'failed')),
            claim_token TEXT,
            lease_until REAL,
            available_at REAL NOT NULL DEFAULT 0,
            attempts INTEGER NOT NULL DEFAULT 0,
            epoch INTEGER,
            noise INTEGER NOT NULL DEFAULT 0,
            completed_at TEXT,
            reason TEXT,
            PRIMARY KEY (message_id, recipient)
        ) WITHOUT ROWID""",
        f"""CREATE INDEX {schema}.peerbus_receipts_failed
            ON peerbus_receipts (recipient, message_id) WHERE state = 'failed'""",
        f"""CREATE TABLE {schema}.peerbus_recipients (
            recipient TEXT PRIMARY KEY,
            epoch INTEGER NOT NULL DEFAULT 1,
            senders_json TEXT,
            watermark INTEGER NOT NULL DEFAULT 0,
            noise_acked INTEGER NOT NULL DEFAULT 0,
            registered_at TEXT NOT NULL,
            last_claim_at TEXT
        )""",
        f"CREATE TABLE {schema}.peerbus_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
        f"INSERT INTO {schema}.peerbus_meta (key, value) VALUES ('owner', 'peerbus')",
    )


# Migration n (1-based) takes user_version from n - 1 to n.
OWNED_MIGRATIONS: tuple[tuple[str, ...], ...] = (
    (
        "ALTER TABLE main.returns ADD COLUMN completed_at TEXT",
        "ALTER TABLE main.returns ADD COLUMN recipient_epoch INTEGER",
        # The measured fast path for a cold cursor: a small partial index that the
        # UNION ALL form of the claim query searches once per arm.
        "CREATE INDEX main.returns_pending ON returns (recipient_role, id) "
        "WHERE status = 'pending'",
        *state_tables("main"),
    ),
)
SIDECAR_MIGRATIONS: tuple[tuple[str, ...], ...] = (
    (
        *state_tables("side"),
        # Direct rows acked here whose foreign `status` is still to be written (compat.py).
        "CREATE TABLE side.peerbus_status_outbox (message_id INTEGER PRIMARY KEY)",
    ),
)


def table_exists(conn: sqlite3.Connection, schema: str, table: str) -> bool:
    row = conn.execute(
        f"SELECT 1 FROM {schema}.sqlite_master WHERE type = 'table' AND name = ?", (table,)
    ).fetchone()
    return row is not None


def user_version(conn: sqlite3.Connection, schema: str) -> int:
    return int(conn.execute(f"PRAGMA {schema}.user_version").fetchone()[0])


def missing_contract_columns(conn: sqlite3.Connection) -> tuple[str, ...]:
    have = {str(row[1]) for row in conn.execute("PRAGMA main.table_info(returns)")}
    return tuple(c for c in CONTRACT_COLUMNS if c not in have)


def has_autoincrement(conn: sqlite3.Connection) -> bool:
    row = conn.execute(
        "SELECT sql FROM main.sqlite_master WHERE type = 'table' AND name = 'returns'"
    ).fetchone()
    return row is not None and "AUTOINCREMENT" in str(row[0]).upper()


def migrate(
    conn: sqlite3.Connection,
    *,
    schema: str,
    migrations: tuple[tuple[str, ...], ...],
    path: Path,
) -> int:
    """Apply the migrations this file lacks; call inside BEGIN IMMEDIATE. Returns the version.

    PRAGMA user_version is transactional, so a crash mid-migration leaves the old version
    and none of its statements, and two processes opening the file at once migrate it once.
    """
    found = user_version(conn, schema)
    if found > len(migrations):
        raise SchemaTooNewError(path=path, found=found, supported=len(migrations))
    for version in range(found + 1, len(migrations) + 1):
        for statement in migrations[version - 1]:
            conn.execute(statement)
        conn.execute(f"PRAGMA {schema}.user_version = {version}")
    return len(migrations)


def classify_file(conn: sqlite3.Connection, path: Path) -> str:
    """'new' (no returns table), 'owned' (peerbus's), or 'foreign' (contract columns only).

    Raises ForeignSchemaError when a foreign table lacks a contract column.
    """
    if not table_exists(conn, "main", "returns"):
        return "new"
    if table_exists(conn, "main", "peerbus_meta"):
        return "owned"
    missing = missing_contract_columns(conn)
    if missing:
        raise ForeignSchemaError(path=path, missing=missing)
    return "foreign"
