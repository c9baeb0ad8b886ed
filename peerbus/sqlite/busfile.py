"""One open bus file: its connection, its mode (owned or compatibility) and its options.

`connect_bus` opens the connection, decides the mode and migrates; every SQL function in
peerbus takes the resulting `BusFile`. Owned mode keeps delivery state in the bus file
itself. A foreign file (a `returns` table with the contract columns and nothing of ours) is
left as it is: its journal mode and schema are not touched, the delivery state goes to a
sidecar SQLite file attached as `side`, and acks write `status` (and the table's own
`completed_at`/`processed_at`). Submits fill what the table requires and we can fill
honestly (peerbus/sqlite/shape.py); a table we cannot write correctly is refused at open.

Every bus has an identity (`bus_id` in the state schema's `peerbus_meta`), read once here
and kept on the `BusFile`: message ids are only unique within one bus file, so a consumer
that remembers ids (a turn store) keeps the identity beside them and can tell a bus that
was deleted and made again from the one it knew.

A sidecar also records which table it belongs to (sidecar_identity.py: a random mark, kept
in the sidecar and as a trigger on the table, and the highest id seen). A table made again
at the same path would reuse ids the old receipts and watermarks hold, hiding its rows; on
a mismatch the old state is set aside, delivery restarts from the first row, the bus gets a
new identity, and the notice says so once. An open bus looks again on every claim and
submit (`follow_file`): a stat of the path against the file it opened (a file moved over it
is opened anew, one that vanished raises BusGoneError) and, in compatibility mode, one read
of the mark. `BusOptions.inspect_only` opens without creating or resetting the sidecar (an
in-memory one stands in), for commands that only look.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import sqlite3
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from peerbus.errors import BusGoneError, BusOpenError, SchemaTooNewError, SidecarLostError
from peerbus.model import BusOptions, Mode
from peerbus.sqlite import schema
from peerbus.sqlite.gate import WriterGate
from peerbus.sqlite.shape import ForeignShape, read_shape, require_writable
from peerbus.sqlite.sidecar_identity import (
    current_mark,
    mismatch,
    plant_mark,
    recorded_stamp,
    restart_or_record,
    table_stamp,
)
from peerbus.sqlite.signals import Signals
from peerbus.sqlite.txn import RetryPolicy, run_bare, run_read, run_write
from sqlitekit.connect import connect, use_wal

T = TypeVar("T")
log = logging.getLogger("peerbus")


@dataclass(frozen=True)
class BusFile:
    """An open bus: pass it to the SQL functions. Close it with `close_bus`."""

    conn: sqlite3.Connection
    path: Path
    mode: Mode
    # The schema holding the peerbus_* tables: "main" (owned) or "side" (compatibility).
    state: str
    schema_version: int
    options: BusOptions
    retry: RetryPolicy
    # The bus's identity: a uuid4 hex made once per file (once per sidecar in compat mode).
    identity: str
    # Set in compatibility mode: what the operator should know, said once at open.
    notice: str | None = None
    gate: WriterGate | None = None
    # The foreign table's shape (compatibility mode), read once at open; None when owned.
    shape: ForeignShape | None = None
    # Recipients already warned of a second consumer (said once per open bus).
    warned: set[str] = field(default_factory=set, compare=False, hash=False)
    # The per-recipient wake-up signals (signals.py); None when opened only to look.
    signals: Signals | None = None
    # (st_dev, st_ino) of the file at `path` when it was opened: while the connection holds
    # it, no other file can have it, so a different one at the path is another file.
    file_key: tuple[int, int] | None = None

    def touch(self, recipients: Iterable[str | None]) -> None:
        """Wake the waiters of `recipients` (None: everyone), in every process. Call it
        after the commit that concerns them, never inside the transaction."""
        if self.signals is not None:
            self.signals.touch(recipients)

    def warn_once(self, recipient: str, message: str) -> None:
        if recipient not in self.warned:
            self.warned.add(recipient)
            log.warning("%s", message)

    def write(self, work: Callable[[sqlite3.Connection], T], *, durable: bool = False) -> T:
        """Run `work` in a write transaction. `durable`: fsync at commit (synchronous=FULL)
        when the options ask for durability; for the rest, NORMAL.

        Only what would lose a message if a power cut undid it (a submit) needs the fsync.
        An undone claim, ack or dead letter only means a redelivery, which the host
        recognises by the ids its turn store holds; and the WAL is a log, so a later
        fsync'd commit also makes every earlier one durable, in order.
        """
        sync = "FULL" if durable and self.options.durable else "NORMAL"
        return run_write(
            self.conn, work, path=self.path, retry=self.retry, gate=self.gate, synchronous=sync
        )

    def read(self, work: Callable[[sqlite3.Connection], T]) -> T:
        return run_read(self.conn, work, path=self.path, retry=self.retry)

    def now(self) -> float:
        return self.options.clock()


def bus_identity(file: BusFile) -> str:
    """The identity of the open bus: stable across opens, new for a new file."""
    return file.identity


def sidecar_path(path: Path, options: BusOptions) -> Path:
    return (
        options.sidecar if options.sidecar is not None else path.with_name(path.name + ".peerbus")
    )


def connect_bus(
    path: Path, options: BusOptions | None = None, *, retry: RetryPolicy | None = None
) -> BusFile:
    """Open (creating if absent) the bus at `path`, migrating or attaching as needed."""
    options = options or BusOptions()
    retry = retry or RetryPolicy(deadline=options.lock_deadline)
    try:
        conn = connect(path, busy_timeout=options.busy_timeout)
    except sqlite3.Error as exc:
        raise BusOpenError(
            f"cannot open ({exc}); check the path and its permissions", path=path
        ) from exc
    try:
        bus = _prepare(conn, path, options, retry)
        return dataclasses.replace(bus, file_key=_file_key(path))
    except sqlite3.DatabaseError as exc:
        conn.close()
        raise BusOpenError(
            f"cannot be used as a bus ({exc}); check that it is a SQLite database you can write",
            path=path,
        ) from exc
    except BaseException:
        conn.close()
        raise


def close_bus(bus: BusFile) -> None:
    bus.conn.close()
    if bus.gate is not None:
        bus.gate.close()


def _prepare(
    conn: sqlite3.Connection, path: Path, options: BusOptions, retry: RetryPolicy
) -> BusFile:
    sync = "FULL" if options.durable else "NORMAL"  # migrations are durable
    run_bare(conn, lambda c: c.execute(f"PRAGMA synchronous = {sync}"), path=path, retry=retry)
    kind = run_read(conn, lambda c: schema.classify_file(c, path), path=path, retry=retry)
    if kind == "foreign" and not options.adopt:
        return _attach_sidecar(conn, path, options, retry)
    if kind == "new":
        # WAL lets readers (the dashboard, other panels' pre-checks) run beside the writer.
        # Only set on files we create or adopt: a foreign file's journal mode is its owner's.
        _set_wal(conn, "main", path, retry)
    latest = len(schema.OWNED_MIGRATIONS)
    version = run_read(conn, lambda c: schema.user_version(c, "main"), path=path, retry=retry)
    if kind != "owned" or version < latest:
        # Opening an up-to-date file takes no write lock; only a migration does.
        version = run_write(conn, lambda c: _create_or_migrate(c, path), path=path, retry=retry)
    elif version > latest:
        raise SchemaTooNewError(path=path, found=version, supported=latest)
    if kind == "foreign":
        _set_wal(conn, "main", path, retry)
        log.warning("%s: adopted a foreign returns table (migrated in place)", path)
    return BusFile(
        conn,
        path,
        "owned",
        "main",
        version,
        options,
        retry,
        identity=_identity(conn, "main", path, retry),
        gate=_gate(path, options),
        signals=None if options.inspect_only else Signals.beside(path),
    )


def _set_wal(conn: sqlite3.Connection, schema_name: str, path: Path, retry: RetryPolicy) -> None:
    run_bare(
        conn,
        lambda c: use_wal(c, schema_name),
        path=path,
        retry=retry,
    )


def _create_or_migrate(conn: sqlite3.Connection, path: Path) -> int:
    # Re-checked under the write lock: another process may have created the table meanwhile.
    if not schema.table_exists(conn, "main", "returns"):
        conn.execute(schema.CONTRACT_DDL)
    version = schema.migrate(conn, schema="main", migrations=schema.OWNED_MIGRATIONS, path=path)
    schema.ensure_bus_id(conn, "main")  # made in the transaction that creates or migrates
    return version


def _migrate_sidecar(conn: sqlite3.Connection, side: Path) -> int:
    version = schema.migrate(conn, schema="side", migrations=schema.SIDECAR_MIGRATIONS, path=side)
    schema.ensure_bus_id(conn, "side")
    return version


def _identity(conn: sqlite3.Connection, state: str, path: Path, retry: RetryPolicy) -> str:
    """Read the bus's identity; make it (under the write lock) only when the file has none."""
    found = run_read(conn, lambda c: schema.read_bus_id(c, state), path=path, retry=retry)
    if found is not None:
        return found
    # Only a file whose id was removed by hand gets here: migrations make it otherwise.
    return run_write(conn, lambda c: schema.ensure_bus_id(c, state), path=path, retry=retry)


def _attach_sidecar(
    conn: sqlite3.Connection, path: Path, options: BusOptions, retry: RetryPolicy
) -> BusFile:
    side = sidecar_path(path, options)
    shape = run_read(conn, read_shape, path=path, retry=retry)  # read once, kept on the bus
    if not options.inspect_only:
        # Refused at open, before a sidecar is made: never at the first send. A read-only
        # look (inbox, tail) still shows such a table.
        require_writable(shape, path)
    if options.inspect_only and not side.is_file():
        return _inspect_without_sidecar(
            conn, path, options, retry, side, "there is none yet", shape
        )
    _check_not_lost(path, side)
    try:
        conn.execute("ATTACH DATABASE ? AS side", (str(side),))
        _set_wal(conn, "side", path, retry)
        # Receipts need no fsync: losing the last ones to a power cut means a redelivery.
        conn.execute("PRAGMA side.synchronous = NORMAL")
        version = run_read(conn, lambda c: schema.user_version(c, "side"), path=path, retry=retry)
    except sqlite3.Error as exc:
        _check_not_lost(path, side, failed=True)
        raise BusOpenError(
            f"compatibility mode needs a writable sidecar file at {side} ({exc}); "
            "pass another sidecar path",
            path=path,
        ) from exc
    latest = len(schema.SIDECAR_MIGRATIONS)
    if options.inspect_only and version != latest:
        conn.execute("DETACH DATABASE side")
        return _inspect_without_sidecar(
            conn, path, options, retry, side, "it is not migrated", shape
        )
    if version != latest:
        version = run_write(conn, lambda c: _migrate_sidecar(c, side), path=path, retry=retry)
    notice = _compat_notice(conn, path, side, retry, shape)
    stamp = run_read(conn, table_stamp, path=path, retry=retry)
    reason = run_read(conn, lambda c: mismatch(c, stamp), path=path, retry=retry)
    if reason is not None and options.inspect_only:
        conn.execute("DETACH DATABASE side")
        return _inspect_without_sidecar(conn, path, options, retry, side, reason, shape)
    mark = run_read(conn, recorded_stamp, path=path, retry=retry).get("table_mark")
    if not options.inspect_only and (reason is not None or mark not in stamp.marks):
        reason = _restart(conn, path, retry)
    if reason is not None:
        notice += " " + _restarted(reason)
    log.warning("%s", notice)
    ident = _identity(conn, "side", path, retry)
    gate = _gate(side, options)
    return BusFile(
        conn,
        path,
        "compat",
        "side",
        version,
        options,
        retry,
        ident,
        notice=notice,
        gate=gate,
        shape=shape,
        signals=None if options.inspect_only else Signals.beside(side),
    )


def _restart(conn: sqlite3.Connection, path: Path, retry: RetryPolicy) -> str | None:
    """Mark the table anew, then (judged again under the write lock: another opener may
    have restarted it meanwhile) set the old table's state aside if it was another's."""
    planted = run_write(conn, plant_mark, path=path, retry=retry)
    return run_write(conn, lambda c: restart_or_record(c, planted), path=path, retry=retry)


def _restarted(reason: str) -> str:
    return (
        f"The sidecar belonged to another `returns` table ({reason}): its receipts and "
        "watermarks were set aside and delivery restarts from the table's first row, so "
        "no row of this table is hidden (a row delivered before may come once more)."
    )


def _file_key(path: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino)


def follow_file(bus: BusFile) -> BusFile:
    """The bus to use now: `bus`, or the file at its path opened anew when another file was
    moved over it, with a new identity when its table is another one. Raises BusGoneError
    when the file is gone. Cheap enough for every claim and submit: a stat, and in
    compatibility mode one read of the table's mark (sidecar_identity.py)."""
    key = _file_key(bus.path)
    if key is None:
        raise BusGoneError(path=bus.path, gone=True)
    if bus.file_key is not None and key != bus.file_key:
        # Our connection holds the old file, deleted or moved: nothing written there counts.
        log.warning("%s: the bus file was replaced by another; opening the new one", bus.path)
        close_bus(bus)
        fresh = connect_bus(bus.path, bus.options, retry=bus.retry)
        # The waiters watch the signals they were given: keep them (same directory).
        return dataclasses.replace(fresh, signals=bus.signals, warned=bus.warned)
    if bus.mode != "compat" or bus.options.inspect_only:
        return bus
    _, present, identity = bus.read(current_mark)
    if not present:
        reason = _restart(bus.conn, bus.path, bus.retry)
        identity = bus.read(lambda c: schema.read_bus_id(c, "side"))
        if reason is not None:
            log.warning("%s: %s", bus.path, _restarted(reason))
    if identity is None or identity == bus.identity:
        return bus
    # Restarted here or by another process sharing the sidecar: the old ids are void.
    return dataclasses.replace(bus, identity=identity)


def _compat_notice(
    conn: sqlite3.Connection, path: Path, side: Path, retry: RetryPolicy, shape: ForeignShape
) -> str:
    acked = ["`status`"] + [
        f"`{column}`"
        for column, present in (
            ("completed_at", shape.has_completed_at),
            ("processed_at", shape.has_processed_at),
        )
        if present
    ]
    filled = (
        f"; submits also fill {', '.join(f'`{c}`' for c in shape.fills)} "
        "(session_id = peerbus-<bus id>)"
        if shape.fills
        else ""
    )
    notice = (
        f"{path}: foreign `returns` table: compatibility mode, its columns left as they "
        "are (an inert trigger, peerbus_mark_*, marks which table it is). "
        f"Receipts, leases and watermarks are kept in {side}; acks write "
        f"{', '.join(acked)}{filled}; "
        "the watermark advances only after the consuming turn's ack. If the original "
        "mnemara still polls this table for a panel that also runs here, both consume its "
        "rows: a shared table cannot prevent duplicates then."
    )
    if not run_read(conn, schema.has_autoincrement, path=path, retry=retry):
        notice += " The table has no AUTOINCREMENT, so prune keeps its newest row."
    return notice


def _inspect_without_sidecar(
    conn: sqlite3.Connection,
    path: Path,
    options: BusOptions,
    retry: RetryPolicy,
    side: Path,
    why: str,
    shape: ForeignShape,
) -> BusFile:
    """A read-only look at a foreign table: an empty in-memory sidecar stands in for the
    real one (absent, or kept for another table), so every row shows as its table says."""
    conn.execute("ATTACH DATABASE ':memory:' AS side")
    # A deferred BEGIN locks only what it touches: the in-memory file, never the table.
    conn.execute("BEGIN")
    try:
        version = _migrate_sidecar(conn, side)
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    notice = (
        f"{path}: foreign `returns` table: compatibility mode, shown without its sidecar "
        f"{side} ({why}): rows are as the table says, with no receipts."
    )
    log.warning("%s", notice)
    ident = _identity(conn, "side", path, retry)
    return BusFile(
        conn, path, "compat", "side", version, options, retry, ident, notice=notice, shape=shape
    )


def _check_not_lost(path: Path, side: Path, *, failed: bool = False) -> None:
    """Raise SidecarLostError when the sidecar was deleted under a running consumer.

    Its -wal and -shm files outlive it, and SQLite answers a new file beside them with a
    bare "disk I/O error". An empty sidecar beside them counts only once opening failed:
    a sidecar being created this instant is briefly empty too.
    """
    leftovers = [side.with_name(side.name + ext) for ext in ("-wal", "-shm")]
    if not any(p.exists() for p in leftovers):
        return
    try:
        size: int | None = side.stat().st_size
    except FileNotFoundError:
        size = None
    if size is None or (failed and size == 0):
        raise SidecarLostError(path=path, sidecar=side)


def _gate(state_file: Path, options: BusOptions) -> WriterGate | None:
    if not options.writer_gate:
        return None
    gate_path = state_file.with_name(state_file.name + ".writers")
    try:
        return WriterGate(gate_path)
    except OSError as exc:
        raise BusOpenError(
            f"cannot open the writers' gate {gate_path} ({exc}); make the directory "
            "writable or set writer_gate=False",
            path=state_file,
        ) from exc


def note_seen(conn: sqlite3.Connection, bus: BusFile, top: int) -> None:
    """Raise the sidecar's highest id seen to `top` (in the caller's write transaction)."""
    if bus.mode == "compat":
        conn.execute(
            """UPDATE side.peerbus_meta SET value = ?
                WHERE key = 'max_id_seen' AND CAST(value AS INTEGER) < ?""",
            (str(top), top),
        )
