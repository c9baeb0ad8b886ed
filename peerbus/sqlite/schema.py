"""The `returns` table's contract, peerbus's additions, and the versioned migrations.

The seven contract columns are the original README's, and a bus file created here starts
from exactly that table, so a created file and an adopted one end up alike. Migrations only
add (ALTER TABLE ... ADD COLUMN, new tables, new indexes): the table is never rebuilt, so
AUTOINCREMENT and its `sqlite_sequence` row survive, and no id is ever handed out twice.

The delivery state lives in `peerbus_*` tables, in the bus file when peerbus owns it, or in
a sidecar file (attached as `side`) when the bus file is foreign:
- `peerbus_receipts`: one row per (message, recipient): lease, claim token, epoch, done /
  failed, so a broadcast is delivered to and acked by every recipient on its own.
  `attempts` counts the deliveries whose turn failed on its own (a nack with count=True);
  `deliveries` counts every claim that handed the message out, cut-off ones included
  (a host killed mid-turn, an expired lease): informational only, since a crash says
  nothing about the message;
- `peerbus_recipients`: each recipient's epoch, sender filter, noise count and watermark;
- `peerbus_sent`: the idempotency keys of keyed submits, with the id each one produced;
- `peerbus_meta`: marks the file as peerbus's, and holds `bus_id`, the bus's identity (a
  uuid4 hex made once per file), which tells message ids of different bus files apart; a
  sidecar's also holds `table_mark`, the identity of the table it belongs to
  (sidecar_identity.py);
- `peerbus_own` (sidecar only): the ids of the rows peerbus wrote into the foreign table,
  so that the stamp format follows the other writers' rows (shape.stamp_style).
`PRAGMA user_version` counts the migrations applied to that file: 2 for a bus file, 3 for
a sidecar.
"""

from __future__ import annotations

import sqlite3
import uuid
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


def counts_and_keys(schema: str) -> tuple[str, ...]:
    """Migration 2 of the state tables: delivery counts apart from failures, and sent keys."""
    return (
        f"ALTER TABLE {schema}.peerbus_receipts ADD COLUMN deliveries INTEGER NOT NULL DEFAULT 0",
        # Until now `attempts` counted claims, which is what `deliveries` counts. The old
        # count is kept as the failure count too: it can only overstate the failures, so
        # no poison message gets more turns than the old rule gave it.
        f"UPDATE {schema}.peerbus_receipts SET deliveries = attempts",
        f"""CREATE TABLE {schema}.peerbus_sent (
            key TEXT PRIMARY KEY,
            message_id INTEGER NOT NULL,
            sent_at TEXT NOT NULL
        ) WITHOUT ROWID""",
        # prune forgets the keys of the rows it deletes, looked up by message id.
        f"CREATE INDEX {schema}.peerbus_sent_message ON peerbus_sent (message_id)",
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
    counts_and_keys("main"),
)
SIDECAR_MIGRATIONS: tuple[tuple[str, ...], ...] = (
    (
        *state_tables("side"),
        # Direct rows acked here whose foreign `status` is still to be written (compat.py).
        "CREATE TABLE side.peerbus_status_outbox (message_id INTEGER PRIMARY KEY)",
    ),
    counts_and_keys("side"),
    # The rows we wrote into the foreign table: never evidence of its stamp format.
    ("CREATE TABLE side.peerbus_own (message_id INTEGER PRIMARY KEY)",),
)


def read_bus_id(conn: sqlite3.Connection, schema: str) -> str | None:
    """The bus's identity from `{schema}.peerbus_meta`, or None when it has none yet."""
    row = conn.execute(f"SELECT value FROM {schema}.peerbus_meta WHERE key = 'bus_id'").fetchone()
    return None if row is None else str(row[0])


def ensure_bus_id(conn: sqlite3.Connection, schema: str) -> str:
    """Give the bus its identity unless it has one; call inside BEGIN IMMEDIATE.

    INSERT OR IGNORE then a re-read: when two processes open a file that lacks one, the
    first to take the write lock makes it and the second reads that same one back.
    """
    fresh = uuid.uuid4().hex
    conn.execute(
        f"INSERT OR IGNORE INTO {schema}.peerbus_meta (key, value) VALUES ('bus_id', ?)",
        (fresh,),
    )
    return read_bus_id(conn, schema) or fresh


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
