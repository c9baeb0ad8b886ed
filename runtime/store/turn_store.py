"""`TurnStore`: one instance's `turns.sqlite` (rows, slots, markers, meta, delivery state)
behind one connection.

Synchronous; every method is one read or one `BEGIN IMMEDIATE` write transaction, so it is safe
to share the file with other processes. Async code uses AsyncTurnStore (async_store.py), which
runs these methods on a worker thread one at a time.

Delivery state (delivery_sql.py) is what turns consumed and what they asked to send. It is
written by `commit_turn` in the turn's own transaction, and outlives the window's rows: the
owner asks `committed` which ids to ack, and publishes `outbox_pending`.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import TypeVar

from runtime.errors import StoreError
from runtime.instance.debuglog import DebugLog
from runtime.store import connection, delivery_sql, row_sql, schema, slot_sql
from runtime.store.codec import seconds_before, utc_now
from runtime.store.connection import DEFAULT_RETRY, RetryPolicy
from runtime.store.schema import MigrationReport
from runtime.store.snapshot import StoreSnapshot, read_snapshot, write_snapshot
from runtime.store.window_mirror import WindowMirror
from runtime.window.plan import RowStat
from runtime.window.rows import Block, Consumed, Marker, NewRow, OutboxDraft, OutboxEntry, Row, Slot

T = TypeVar("T")


class TurnStore:
    """The turn store of one instance; open with `TurnStore.open(path)`, close when done."""

    def __init__(
        self,
        conn: sqlite3.Connection,
        path: Path,
        *,
        migration: MigrationReport,
        debug: DebugLog | None,
        retry: RetryPolicy,
        clock: Callable[[], str],
    ) -> None:
        self.path = path
        self.migration = migration
        self._conn = conn
        self._mirror = WindowMirror()
        self._debug = debug
        self._retry = retry
        self._clock = clock

    @classmethod
    def open(
        cls,
        path: Path,
        *,
        debug: DebugLog | None = None,
        retry: RetryPolicy = DEFAULT_RETRY,
        clock: Callable[[], str] = utc_now,
        convert_original: bool = False,
    ) -> TurnStore:
        """Open (creating or migrating) the store; a damaged file raises StoreCorruptError.

        A store the original mnemara wrote is converted only with `convert_original`
        (`mnemara migrate`, which reports what it did); otherwise StoreError names the command."""
        conn = connection.connect(path, retry)
        try:
            connection.check_integrity(conn, path, policy=retry, debug=debug)
            state = schema.inspect(conn, path, policy=retry, debug=debug)
            if state.legacy_table is not None and not convert_original:
                raise schema.original_refusal(path)
            # Only now, with the file known to be ours (or the original's), is it changed; the
            # backup a migration keeps is taken first, so it is the file as it was.
            migration = schema.migrate(conn, path, state, policy=retry, debug=debug)
            connection.run_untransacted(
                conn,
                lambda c: connection.set_durable_pragmas(c, path, debug),
                path=path,
                policy=retry,
                debug=debug,
            )
        except BaseException as exc:
            conn.close()
            if debug is not None and isinstance(exc, StoreError):
                debug.write("error", "store_open_failed", path=str(path), error=str(exc))
            raise
        return cls(conn, path, migration=migration, debug=debug, retry=retry, clock=clock)

    @classmethod
    def open_read_only(
        cls,
        path: Path,
        *,
        debug: DebugLog | None = None,
        retry: RetryPolicy = DEFAULT_RETRY,
    ) -> TurnStore:
        """The store as it reads, with no byte of `path` written, whoever wrote it.

        A current store is read in place through a read-only connection. An older one, or the
        original mnemara's, is copied into memory and migrated there (the original converted
        as `mnemara migrate` would, markers and all), so readers see our rows; a missing file
        reads as an empty store and is not created. Every write raises StoreError."""
        if not path.exists():
            return cls._in_memory(None, path, None, debug=debug, retry=retry)
        conn = connection.connect_read_only(path, retry)
        try:
            connection.check_integrity(conn, path, policy=retry, debug=debug)
            state = schema.inspect(conn, path, policy=retry, debug=debug)
        except BaseException:
            conn.close()
            raise
        if state.version == schema.LATEST_VERSION:
            report = MigrationReport(path, "up_to_date", state.version, state.version)
            return cls(conn, path, migration=report, debug=debug, retry=retry, clock=utc_now)
        return cls._in_memory(conn, path, state, debug=debug, retry=retry)

    @classmethod
    def _in_memory(
        cls,
        source: sqlite3.Connection | None,
        path: Path,
        state: schema.SchemaState | None,
        *,
        debug: DebugLog | None,
        retry: RetryPolicy,
    ) -> TurnStore:
        """A copy of `source` (None: an empty store) in memory, migrated, then made read-only."""
        conn = connection.connect(Path(":memory:"), retry)
        try:
            if source is not None:
                with connection.translate_errors(path):
                    source.backup(conn)
            migration = schema.migrate(
                conn, path, state or schema.SchemaState(0, None), policy=retry, debug=debug,
                backup=False,
            )  # fmt: skip
            conn.execute("PRAGMA query_only = ON")
        except BaseException:
            conn.close()
            raise
        finally:
            if source is not None:
                source.close()
        return cls(conn, path, migration=migration, debug=debug, retry=retry, clock=utc_now)

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> TurnStore:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # -- rows -------------------------------------------------------------------------------

    def rows(self) -> list[Row]:
        """The window, reading only rows that are new or changed since the last call.

        Rows are immutable values, so the decoded ones are kept by (id, revision) in a mirror
        of the window (window_mirror.py); a read costs what changed since, not the window.
        """
        return self._read(lambda c: self._synced(c).rows())

    def revised_rows(self) -> list[tuple[int, Row]]:
        """The window as (revision, row) pairs: a revision is never reused, in any process,
        so (id, revision) names one content of a row (what a render cache keys on)."""
        return self._read(lambda c: self._synced(c).revised())

    def window_totals(self) -> tuple[int, int]:
        """(rows, tokens) of the window, for deciding whether a trim is due."""
        return self._read(lambda c: self._synced(c).totals())

    def row_stats(self) -> list[RowStat]:
        """What trimming needs of every row, in window order, from the mirror: no blocks are
        read or decoded (a query of these columns alone scans the whole table, blocks and
        all, which took twice as long at 2,000 rows)."""
        return self._read(lambda c: self._synced(c).stats())

    def _synced(self, conn: sqlite3.Connection) -> WindowMirror:
        self._mirror.sync(conn)
        return self._mirror

    def row(self, row_id: int) -> Row | None:
        return self._read(lambda c: row_sql.select_row(c, row_id))

    def append(self, rows: Sequence[NewRow]) -> list[int]:
        ts = self._clock()
        return self._write_rows(
            lambda c: row_sql.insert_rows(c, rows, ts=ts, status="complete"), lambda ids: ids
        )

    def begin_turn(self, user: NewRow) -> int:
        """Store a turn's input before the model answers, so a crash cannot lose it.

        In the same transaction, an interrupted input row that consumed any of the same
        message ids, or that carries the same label (an input that consumes no message), is
        deleted: an earlier try of this input, cut off (a host killed mid-turn
        leaves its row in flight, marked interrupted at the next open) or failed. Its messages
        are here again, so the window holds each input once however often its turn died.
        (Window rows carry no bus identity, so an interrupted row whose ids came from
        another bus and collide is deleted too.)"""
        ts = self._clock()

        def begin(c: sqlite3.Connection) -> tuple[int, list[int]]:
            replaced = row_sql.delete_interrupted_inputs(c, user.consumed_ids, user.label)
            return row_sql.insert_rows(c, [user], ts=ts, status="in_flight")[0], replaced

        row_id, replaced = self._write_rows(begin, lambda done: [done[0], *done[1]])
        if replaced and self._debug is not None:
            self._debug.write(
                "warning", "interrupted_input_replaced", row_ids=replaced, by_row=row_id
            )
        return row_id

    def commit_turn(
        self,
        user_row_id: int,
        rows: Sequence[NewRow],
        *,
        user_tokens: int | None = None,
        user_tokens_exact: bool = False,
        consumed: Consumed | None = None,
        outbox: Sequence[OutboxDraft] = (),
        meta: Mapping[str, str] | None = None,
    ) -> list[int]:
        """Append the turn's rows, mark its input complete, record the message ids it consumed,
        store its sends and set `meta` (the turn's figures), atomically: all of it is written
        or none, in one sync to disk."""
        ts = self._clock()
        drafts = list(outbox)
        figures = dict(meta or {})

        def commit(c: sqlite3.Connection) -> list[int]:
            status = row_sql.row_status(c, user_row_id)
            if status != "in_flight":
                raise StoreError(
                    f"{self.path}: cannot commit turn of row {user_row_id}: its status is "
                    f"{status or 'missing'}, not in_flight (was it recovered by another "
                    "session?); nothing was written.",
                    path=self.path,
                    row_id=user_row_id,
                )
            ids = row_sql.insert_rows(c, rows, ts=ts, status="complete")
            row_sql.complete_row(c, user_row_id, tokens=user_tokens, tokens_exact=user_tokens_exact)
            if consumed is not None and consumed.ids:
                delivery_sql.insert_delivered(c, consumed, user_row_id=user_row_id, ts=ts)
            if drafts:
                source = consumed.source if consumed is not None else delivery_sql.UNKNOWN_SOURCE
                delivery_sql.insert_outbox(c, drafts, user_row_id=user_row_id, ts=ts, source=source)
            for key, value in figures.items():
                slot_sql.set_meta(c, key, value)
            return ids

        return self._write_rows(commit, lambda ids: [*ids, user_row_id])

    def recover_interrupted(self) -> list[int]:
        """Mark inputs whose turn never committed as 'interrupted'; returns their ids."""
        ids = self._write_rows(row_sql.mark_interrupted, lambda ids: ids)
        if ids and self._debug is not None:
            self._debug.write("warning", "turn_interrupted", path=str(self.path), row_ids=ids)
        return ids

    def delete_rows(self, ids: Iterable[int]) -> int:
        wanted = list(ids)
        if not wanted:
            return 0
        return self._write_rows(lambda c: row_sql.delete_rows(c, wanted), lambda _: wanted)

    def replace_blocks(
        self,
        row_id: int,
        blocks: Sequence[Block],
        tokens: int,
        *,
        tokens_exact: bool = False,
        compressed: bool | None = None,
    ) -> None:
        self._update_row(
            row_id,
            lambda c: row_sql.update_blocks(
                c, row_id, blocks, tokens, tokens_exact=tokens_exact, compressed=compressed
            ),
        )

    def set_pinned(self, row_id: int, pinned: bool) -> None:
        self._update_row(row_id, lambda c: row_sql.update_pinned(c, row_id, pinned))

    def set_label(self, row_id: int, label: str) -> None:
        self._update_row(row_id, lambda c: row_sql.update_label(c, row_id, label))

    def clear(self, *, keep_pinned: bool = True) -> int:
        """Delete the window's rows (pinned ones kept unless asked); slots go only with pins.

        Delivery state is left alone: a cleared window has still consumed what it consumed."""

        def wipe(c: sqlite3.Connection) -> int:
            deleted = row_sql.delete_all_rows(c, keep_pinned=keep_pinned)
            if not keep_pinned:
                slot_sql.delete_all_slots(c)
            return deleted

        return self._write_rows(wipe, None)

    def consumed_ids(self) -> set[int]:
        """Ids on the window's complete rows (display, export); trimmed rows take theirs along.
        Whether a message was consumed is `committed`'s answer."""
        return self._read(row_sql.select_consumed_ids)

    # -- delivery state ---------------------------------------------------------------------

    def committed(self, source: str, ids: Sequence[int]) -> dict[int, int]:
        """Of `ids`, those a committed turn consumed, each mapped to that turn's input row id.

        A record under the unknown source '' matches any `source`. Only the given ids are
        looked up, so the cost does not grow with the history."""
        wanted = list(ids)
        if not wanted:
            return {}
        return self._read(lambda c: delivery_sql.select_committed(c, source, wanted))

    def mark_acked(self, source: str, ids: Sequence[int]) -> int:
        """Note that the ids were acked (their own records and matching '' ones); rows changed."""
        wanted = list(ids)
        if not wanted:
            return 0
        ts = self._clock()
        return self._write(lambda c: delivery_sql.update_acked(c, source, wanted, ts=ts))

    def unacked(self, source: str, *, limit: int = 10_000) -> list[int]:
        """Ids consumed from `source` whose ack was never noted here: the owner asks its bus
        about them (a crash between the bus's ack and `mark_acked` leaves such ids, and no
        redelivery will come to note them)."""
        return self._read(lambda c: delivery_sql.select_unacked(c, source, limit))

    def outbox_pending(self, source: str | None = None) -> list[OutboxEntry]:
        """Committed sends not yet published nor failed, in the order they were queued; with
        `source`, only the sends of turns fed from there (or from an unknown source)."""
        return self._read(lambda c: delivery_sql.select_pending(c, source))

    def outbox(self, *, limit: int = 100) -> list[OutboxEntry]:
        """The newest `limit` sends whatever their state, newest last (for viewers)."""
        return self._read(lambda c: delivery_sql.select_outbox(c, limit))

    def mark_published(self, key: str, message_id: int) -> None:
        """Record that the send with `key` went out as bus message `message_id`."""
        ts = self._clock()
        self._update_send(key, lambda c: delivery_sql.update_published(c, key, message_id, ts=ts))

    def mark_send_failed(self, key: str, reason: str) -> None:
        """Give up on the send with `key` (it leaves `outbox_pending`); a published one stays."""
        ts = self._clock()
        self._update_send(key, lambda c: delivery_sql.update_failed(c, key, reason, ts=ts))

    def prune_delivery(self, *, older_than: float) -> int:
        """Delete delivery state settled more than `older_than` seconds ago; rows deleted.

        Goes: delivered rows acked before then, unknown-source ('') rows committed before then,
        sends published or failed before then. Stays: every unacked delivered row of a known
        source, every pending send."""
        cutoff = seconds_before(self._clock(), older_than)
        return self._write(lambda c: delivery_sql.prune(c, cutoff=cutoff))

    # -- slots ------------------------------------------------------------------------------

    def slots(self) -> list[Slot]:
        return self._read(slot_sql.select_slots)

    def upsert_slot(self, label: str, role: str, content: str, position: int | None = None) -> Slot:
        """Update the slot in place, or insert it (at `position`, else after the last one)."""
        if not label:
            raise StoreError("a slot needs a non-empty label", path=self.path)
        ts = self._clock()
        return self._write(lambda c: slot_sql.upsert_slot(c, label, role, content, position, ts=ts))

    def delete_slot(self, label: str) -> bool:
        return self._write(lambda c: slot_sql.delete_slot(c, label))

    def move_slot(self, label: str, position: int) -> Slot:
        slot = self._write(lambda c: slot_sql.move_slot(c, label, position))
        if slot is None:
            raise StoreError(f"no slot labelled {label!r}; see the slot list", path=self.path)
        return slot

    # -- markers and meta -------------------------------------------------------------------

    def mark_segment(self, name: str) -> Marker:
        if not name:
            raise StoreError("a marker needs a non-empty name", path=self.path)
        ts = self._clock()
        return self._write(lambda c: slot_sql.mark_segment(c, name, ts=ts))

    def markers(self) -> list[Marker]:
        return self._read(slot_sql.select_markers)

    def rows_since(self, marker_name: str) -> list[Row]:
        """Rows added after the marker was set; an unknown name is a StoreError."""

        def since(c: sqlite3.Connection) -> list[Row] | None:
            marker = slot_sql.select_marker(c, marker_name)
            return None if marker is None else row_sql.select_rows(c, after_id=marker.after_row_id)

        rows = self._read(since)
        if rows is None:
            raise StoreError(f"no marker named {marker_name!r}; set one first", path=self.path)
        return rows

    def get_meta(self, key: str) -> str | None:
        return self._read(lambda c: slot_sql.get_meta(c, key))

    def set_meta(self, key: str, value: str) -> None:
        self._write(lambda c: slot_sql.set_meta(c, key, value))

    # -- whole-store copies (export / import) -----------------------------------------------

    def snapshot(self) -> StoreSnapshot:
        """The window, slots, markers and meta, read in one transaction (not delivery state,
        which belongs to the owner's bus, not to the conversation)."""
        return self._read(read_snapshot)

    def restore(self, snapshot: StoreSnapshot, *, replace: bool = False) -> None:
        """Load a snapshot in one transaction; refused when the store is not empty unless
        `replace`, which first deletes every row (in-flight ones too), slot, marker and meta.
        Delivery state is neither in a snapshot nor touched by a restore."""
        self._write_rows(
            lambda c: write_snapshot(c, snapshot, replace=replace, path=self.path), None
        )

    # -- plumbing ---------------------------------------------------------------------------

    def _update_send(self, key: str, update: Callable[[sqlite3.Connection], None]) -> None:
        def guarded(c: sqlite3.Connection) -> bool:
            if not delivery_sql.has_outbox_key(c, key):
                return False
            update(c)
            return True

        if not self._write(guarded):
            raise StoreError(
                f"{self.path}: no outbox entry with key {key!r}; only sends this store "
                "committed can be marked (and settled ones are pruned after a while).",
                path=self.path,
            )

    def _update_row(self, row_id: int, update: Callable[[sqlite3.Connection], bool]) -> None:
        if not self._write_rows(update, lambda _: [row_id]):
            raise StoreError(f"no row {row_id} in the window", path=self.path, row_id=row_id)

    def _read(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        return connection.run_read(
            self._conn, fn, path=self.path, policy=self._retry, debug=self._debug
        )

    def _write_rows(
        self,
        fn: Callable[[sqlite3.Connection], T],
        touched: Callable[[T], Iterable[int]] | None,
    ) -> T:
        """A write that changes window rows; `touched` names them from its result (None: it
        cannot say) so the mirror fetches just those again. Every write to `window_rows`
        through this connection must come here: the mirror sees other connections' commits
        by themselves, but not this one's."""
        try:
            result = self._write(fn)
        except BaseException:
            self._mirror.invalidate()  # rolled back, but be sure: one full resync is cheap
            raise
        if touched is None:
            self._mirror.invalidate()
        else:
            self._mirror.touch(touched(result))
        return result

    def _write(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        return connection.run_write(
            self._conn, fn, path=self.path, policy=self._retry, debug=self._debug
        )
