"""The turn store's schema, its version (`PRAGMA user_version`) and the ordered migrations.

`MIGRATIONS[n]` takes a database from version n to n + 1. Version 0 is either a fresh file or
one written by the original mnemara (a single table with `content` and `pin_label` columns);
the latter is copied aside first and converted in the same transaction that creates version 1,
and only when the caller asks for it (`mnemara migrate`): any other opener is refused, so the
original can go on using its file. A file from a newer mnemara, or a SQLite file that is not a
turn store at all, is refused without being touched.
"""

from __future__ import annotations

import shutil
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from runtime.errors import StoreError
from runtime.instance.debuglog import DebugLog
from runtime.store import original_rows, row_sql, slot_sql
from runtime.store.codec import utc_now
from runtime.store.connection import (
    DEFAULT_RETRY,
    RetryPolicy,
    connect_read_only,
    run_read,
    run_untransacted,
    run_write,
)

MigrationAction = Literal["absent", "created", "up_to_date", "migrated", "converted_legacy"]


def _v1_tables(conn: sqlite3.Connection) -> None:
    # AUTOINCREMENT: ids are never reused after deletes, so markers (`after_row_id`) and
    # exported ids keep meaning the same rows.
    conn.execute(
        """CREATE TABLE window_rows (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            ts TEXT NOT NULL,
            role TEXT NOT NULL CHECK (role IN ('user', 'assistant', 'system')),
            blocks TEXT NOT NULL,
            tokens INTEGER NOT NULL,
            tokens_exact INTEGER NOT NULL DEFAULT 0,
            pinned INTEGER NOT NULL DEFAULT 0,
            label TEXT NOT NULL DEFAULT '',
            status TEXT NOT NULL DEFAULT 'complete'
                CHECK (status IN ('in_flight', 'complete', 'interrupted')),
            consumed_ids TEXT NOT NULL DEFAULT '[]',
            compressed INTEGER NOT NULL DEFAULT 0
        )"""
    )
    conn.execute("CREATE INDEX window_rows_status ON window_rows (status)")
    conn.execute(
        """CREATE TABLE slots (
            label TEXT PRIMARY KEY,
            role TEXT NOT NULL,
            content TEXT NOT NULL,
            position INTEGER NOT NULL,
            updated_at TEXT NOT NULL
        )"""
    )
    conn.execute(
        """CREATE TABLE markers (
            name TEXT PRIMARY KEY,
            after_row_id INTEGER NOT NULL,
            ts TEXT NOT NULL
        )"""
    )
    conn.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")


def _v2_row_revisions(conn: sqlite3.Connection) -> None:
    # Every insert or change of a row stamps it with a number from one store-wide counter, so
    # a reader can tell which rows changed (in any process) from a cheap `SELECT id, rev` and
    # decode only those. A counter, not a per-row count: an id deleted and imported again gets
    # a stamp it never had before.
    conn.execute("ALTER TABLE window_rows ADD COLUMN rev INTEGER NOT NULL DEFAULT 0")
    conn.execute("CREATE TABLE row_revision (n INTEGER NOT NULL)")
    conn.execute("INSERT INTO row_revision (n) VALUES (0)")
    stamp = (
        "BEGIN UPDATE row_revision SET n = n + 1;"
        " UPDATE window_rows SET rev = (SELECT n FROM row_revision) WHERE id = NEW.id; END"
    )
    conn.execute(f"CREATE TRIGGER window_rows_rev_insert AFTER INSERT ON window_rows {stamp}")
    conn.execute(
        "CREATE TRIGGER window_rows_rev_update AFTER UPDATE OF ts, role, blocks, tokens,"
        f" tokens_exact, pinned, label, status, consumed_ids, compressed ON window_rows {stamp}"
    )


def _v3_delivery(conn: sqlite3.Connection) -> None:
    # Delivery state lives outside the window, so no trim, eviction or `clear` can forget that
    # a message was consumed. Keyed by (source, message_id): ids are unique per bus, not across
    # buses. Backfilled from the consumed ids of answered inputs, under the unknown source ''.
    conn.execute(
        """CREATE TABLE delivered (
            source TEXT NOT NULL,
            message_id INTEGER NOT NULL,
            user_row_id INTEGER NOT NULL,
            committed_at TEXT NOT NULL,
            acked_at TEXT,
            PRIMARY KEY (source, message_id)
        ) WITHOUT ROWID"""
    )
    conn.execute("CREATE INDEX delivered_acked ON delivered (acked_at) WHERE acked_at IS NOT NULL")
    # A turn's sends, written with the turn and published after it: a cut-off turn sends
    # nothing, and a crash after the commit publishes them on the next start (by `key`).
    # `source` is where the turn's input came from: its sends go back there only.
    conn.execute(
        """CREATE TABLE outbox (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            key TEXT NOT NULL UNIQUE,
            source TEXT NOT NULL DEFAULT '',
            user_row_id INTEGER NOT NULL,
            position INTEGER NOT NULL,
            recipient TEXT,
            topic TEXT,
            payload TEXT NOT NULL,
            created_at TEXT NOT NULL,
            published_at TEXT,
            message_id INTEGER,
            failed TEXT,
            failed_at TEXT
        )"""
    )
    conn.execute(
        "CREATE INDEX outbox_pending ON outbox (id) WHERE published_at IS NULL AND failed IS NULL"
    )
    conn.execute(
        "INSERT INTO delivered (source, message_id, user_row_id, committed_at)"
        " SELECT '', j.value, r.id, ? FROM window_rows AS r, json_each(r.consumed_ids) AS j"
        " WHERE r.status = 'complete' ORDER BY r.id"
        " ON CONFLICT DO NOTHING",
        (utc_now(),),
    )


MIGRATIONS: tuple[Callable[[sqlite3.Connection], None], ...] = (
    _v1_tables,
    _v2_row_revisions,
    _v3_delivery,
)
LATEST_VERSION = len(MIGRATIONS)


@dataclass(frozen=True)
class MigrationReport:
    """What opening (or `mnemara migrate`) did to one turns.sqlite."""

    path: Path
    action: MigrationAction
    from_version: int | None
    to_version: int | None
    rows_converted: int = 0
    backup: Path | None = None
    notes: tuple[str, ...] = ()
    markers_converted: int = 0

    def __str__(self) -> str:
        return self.describe()

    def describe(self) -> str:
        """A line for the CLI, then one per thing a conversion had to guess or set aside."""
        text = {
            "absent": f"{self.path}: no turn store yet, nothing to migrate",
            "created": f"{self.path}: created (schema v{self.to_version})",
            "up_to_date": f"{self.path}: already at schema v{self.to_version}",
            "migrated": f"{self.path}: schema v{self.from_version} -> v{self.to_version}",
            "converted_legacy": (
                f"{self.path}: converted {self.rows_converted} rows and "
                f"{self.markers_converted} markers from the original mnemara format to "
                f"schema v{self.to_version}"
            ),
        }[self.action]
        if self.backup is not None:
            text += f"; original kept at {self.backup}"
        return "\n".join([text, *(f"  {note}" for note in self.notes)])


def read_version(conn: sqlite3.Connection) -> int:
    return int(conn.execute("PRAGMA user_version").fetchone()[0])


@dataclass(frozen=True)
class SchemaState:
    """What `inspect` found: the version, and the original's turn table if there is one."""

    version: int
    legacy_table: str | None


def inspect(
    conn: sqlite3.Connection, path: Path, *, policy: RetryPolicy, debug: DebugLog | None
) -> SchemaState:
    """Read-only: the file's schema state; a newer or foreign database raises StoreError."""
    # Version and tables are read in one transaction, so a process creating the schema at the
    # same moment is seen either not at all or completely.
    version, legacy_table, foreign = run_read(conn, _inspect, path=path, policy=policy, debug=debug)
    if version > LATEST_VERSION:
        raise StoreError(
            f"{path} was written by a newer mnemara (schema v{version}; this one knows up to "
            f"v{LATEST_VERSION}). Upgrade mnemara to use this instance; the file is unchanged.",
            path=path,
        )
    if foreign:
        raise StoreError(
            f"{path} is a SQLite database but not a mnemara turn store (tables: "
            f"{', '.join(foreign)}). Move it aside; mnemara will not modify it.",
            path=path,
        )
    return SchemaState(version, legacy_table)


def original_refusal(path: Path) -> StoreError:
    """The error for opening an original mnemara's store with anything but `mnemara migrate`."""
    name = path.parent.name
    return StoreError(
        f"{path} is the original mnemara's turn store, not converted yet; "
        f"`mnemara show --instance {name}` reads it as it is, and "
        f"`mnemara migrate --instance {name}` converts it (keeping a backup). "
        "The file is unchanged.",
        path=path,
    )


def refuse_original(path: Path, policy: RetryPolicy = DEFAULT_RETRY) -> None:
    """StoreError (`original_refusal`) when `path` is an original mnemara's store not yet
    converted, found without writing a byte; for commands that would change the store, to say
    so before they start anything."""
    if not path.is_file():
        return
    conn = connect_read_only(path, policy)
    try:
        state = inspect(conn, path, policy=policy, debug=None)
    finally:
        conn.close()
    if state.legacy_table is not None:
        raise original_refusal(path)


def migrate(
    conn: sqlite3.Connection,
    path: Path,
    state: SchemaState,
    *,
    policy: RetryPolicy,
    debug: DebugLog | None,
    backup: bool = True,
) -> MigrationReport:
    """Bring the file to LATEST_VERSION, converting an original-mnemara file; report what ran.

    `backup=False` is for a copy in memory (a read-only view), which has nothing to keep."""
    if state.version == LATEST_VERSION:
        return MigrationReport(path, "up_to_date", state.version, state.version)
    legacy_table = state.legacy_table
    kept = None
    if backup and (legacy_table is not None or state.version > 0):
        tag = "original" if legacy_table else f"v{state.version}"
        kept = run_untransacted(
            conn, lambda c: _backup(c, path, tag), path=path, policy=policy, debug=debug
        )

    def step_up(c: sqlite3.Connection) -> MigrationReport:
        # Checked again under the write lock: another process may have migrated meanwhile.
        current = read_version(c)
        if current >= LATEST_VERSION:
            return MigrationReport(path, "up_to_date", current, current, backup=kept)
        converted = None
        if legacy_table is not None:
            converted = original_rows.read_legacy_rows(c, legacy_table)
        for step in MIGRATIONS[current:]:
            step(c)
        c.execute(f"PRAGMA user_version = {LATEST_VERSION}")
        if converted is None:
            action: MigrationAction = "migrated" if current > 0 else "created"
            return MigrationReport(path, action, current, LATEST_VERSION, backup=kept)
        row_sql.insert_whole_rows(c, converted.rows)
        slot_sql.insert_markers(c, list(converted.markers))
        row_sql.raise_last_row_id(c, max((row.id for row in converted.rows), default=0))
        c.execute(f"DROP TABLE {original_rows.quote_name(converted.table)}")
        slot_sql.set_meta(c, "converted_from_original_at", utc_now())
        return MigrationReport(
            path,
            "converted_legacy",
            0,
            LATEST_VERSION,
            rows_converted=len(converted.rows),
            backup=kept,
            notes=converted.notes,
            markers_converted=len(converted.markers),
        )

    report = run_write(conn, step_up, path=path, policy=policy, debug=debug)
    if debug is not None and report.action != "up_to_date" and backup:
        debug.write("info", "store_migrated", detail=report.describe())
    return report


def _inspect(conn: sqlite3.Connection) -> tuple[int, str | None, list[str]]:
    """The schema version, the original's turn table (if any), and tables we do not know."""
    version = read_version(conn)
    if version != 0:
        return version, None, []
    legacy_table = original_rows.find_legacy_table(conn)
    if legacy_table is not None:
        return version, legacy_table, []
    # A version-0 file with tables we do not know is someone else's database: leave it be.
    tables = conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
        " ORDER BY name"
    )
    return version, None, [str(name) for (name,) in tables]


def _backup(conn: sqlite3.Connection, path: Path, tag: str) -> Path:
    """A consistent copy next to the file: its very bytes when everything is in the file (the
    original's rollback journal), else SQLite's backup API, so WAL content is included."""
    target = path.with_name(f"{path.name}.{tag}.bak")
    counter = 1
    while target.exists():
        target = path.with_name(f"{path.name}.{tag}.{counter}.bak")
        counter += 1
    if not path.with_name(f"{path.name}-wal").exists():
        # Under a read transaction's shared lock no writer can change the file while it is
        # copied, so the copy is the file as it was, byte for byte.
        conn.execute("BEGIN")
        try:
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
            shutil.copyfile(path, target)
        except BaseException:
            target.unlink(missing_ok=True)
            raise
        finally:
            conn.execute("COMMIT")
        return target
    copy = sqlite3.connect(target)
    try:
        conn.backup(copy)
    except BaseException:
        copy.close()
        target.unlink(missing_ok=True)  # never leave a partial copy that looks like a backup
        raise
    copy.close()
    return target
