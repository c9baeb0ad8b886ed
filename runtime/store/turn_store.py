"""`TurnStore`: one instance's `turns.sqlite` (rows, slots, markers, meta) behind one connection.

Synchronous; every method is one read or one `BEGIN IMMEDIATE` write transaction, so it is safe
to share the file with other processes. Async code uses AsyncTurnStore (async_store.py), which
runs these methods on a worker thread one at a time.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from types import TracebackType
from typing import TypeVar

from runtime.debuglog import DebugLog
from runtime.errors import StoreError
from runtime.rows import Block, Marker, NewRow, Row, Slot
from runtime.store import connection, row_sql, schema, slot_sql
from runtime.store.codec import utc_now
from runtime.store.connection import DEFAULT_RETRY, RetryPolicy
from runtime.store.schema import MigrationReport
from runtime.store.snapshot import StoreSnapshot, read_snapshot, write_snapshot

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
        self._row_cache: dict[int, tuple[int, Row]] = {}
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
    ) -> TurnStore:
        """Open (creating or migrating) the store; a damaged file raises StoreCorruptError."""
        conn = connection.connect(path, retry)
        try:
            connection.check_integrity(conn, path, policy=retry, debug=debug)
            state = schema.inspect(conn, path, policy=retry, debug=debug)
            # Only now, with the file known to be ours (or the original's), is it changed.
            connection.run_untransacted(
                conn,
                lambda c: connection.set_durable_pragmas(c, path, debug),
                path=path,
                policy=retry,
                debug=debug,
            )
            migration = schema.migrate(conn, path, state, policy=retry, debug=debug)
        except BaseException as exc:
            conn.close()
            if debug is not None and isinstance(exc, StoreError):
                debug.write("error", "store_open_failed", path=str(path), error=str(exc))
            raise
        return cls(conn, path, migration=migration, debug=debug, retry=retry, clock=clock)

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
        """The window, decoding only rows that are new or changed since the last call.

        Rows are immutable values, so the decoded ones are kept by (id, revision); a 2,000-row
        window is then one cheap query per turn instead of decoding every row's JSON again.
        """
        return self._read(self._cached_rows)

    def _cached_rows(self, conn: sqlite3.Connection) -> list[Row]:
        revisions = row_sql.select_revisions(conn)
        cache = self._row_cache
        stale = [i for i, rev in revisions if cache.get(i, (None,))[0] != rev]
        if stale:
            cache.update(row_sql.select_rows_by_id(conn, stale))
        if len(cache) > len(revisions):
            alive = {i for i, _ in revisions}
            for gone in [i for i in cache if i not in alive]:
                del cache[gone]
        return [cache[i][1] for i, _ in revisions]

    def row(self, row_id: int) -> Row | None:
        return self._read(lambda c: row_sql.select_row(c, row_id))

    def append(self, rows: Sequence[NewRow]) -> list[int]:
        ts = self._clock()
        return self._write(lambda c: row_sql.insert_rows(c, rows, ts=ts, status="complete"))

    def begin_turn(self, user: NewRow) -> int:
        """Store a turn's input before the model answers, so a crash cannot lose it."""
        ts = self._clock()
        return self._write(lambda c: row_sql.insert_rows(c, [user], ts=ts, status="in_flight"))[0]

    def commit_turn(
        self,
        user_row_id: int,
        rows: Sequence[NewRow],
        *,
        user_tokens: int | None = None,
        user_tokens_exact: bool = False,
    ) -> list[int]:
        """Append the turn's rows and mark its input complete, atomically."""
        ts = self._clock()

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
            return ids

        return self._write(commit)

    def recover_interrupted(self) -> list[int]:
        """Mark inputs whose turn never committed as 'interrupted'; returns their ids."""
        ids = self._write(row_sql.mark_interrupted)
        if ids and self._debug is not None:
            self._debug.write("warning", "turn_interrupted", path=str(self.path), row_ids=ids)
        return ids

    def delete_rows(self, ids: Iterable[int]) -> int:
        wanted = list(ids)
        return self._write(lambda c: row_sql.delete_rows(c, wanted)) if wanted else 0

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
        """Delete the window's rows (pinned ones kept unless asked); slots go only with pins."""

        def wipe(c: sqlite3.Connection) -> int:
            deleted = row_sql.delete_all_rows(c, keep_pinned=keep_pinned)
            if not keep_pinned:
                slot_sql.delete_all_slots(c)
            return deleted

        return self._write(wipe)

    def consumed_ids(self) -> set[int]:
        return self._read(row_sql.select_consumed_ids)

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
        """Everything in the store, read in one transaction."""
        return self._read(read_snapshot)

    def restore(self, snapshot: StoreSnapshot, *, replace: bool = False) -> None:
        """Load a snapshot in one transaction; refused when the store is not empty unless
        `replace`, which first deletes every row (in-flight ones too), slot, marker and meta."""
        self._write(lambda c: write_snapshot(c, snapshot, replace=replace, path=self.path))

    # -- plumbing ---------------------------------------------------------------------------

    def _update_row(self, row_id: int, update: Callable[[sqlite3.Connection], bool]) -> None:
        if not self._write(update):
            raise StoreError(f"no row {row_id} in the window", path=self.path, row_id=row_id)

    def _read(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        return connection.run_read(
            self._conn, fn, path=self.path, policy=self._retry, debug=self._debug
        )

    def _write(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        return connection.run_write(
            self._conn, fn, path=self.path, policy=self._retry, debug=self._debug
        )
