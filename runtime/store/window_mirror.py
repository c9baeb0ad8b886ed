"""`WindowMirror`: a TurnStore's decoded copy of the window, kept in step with the file at a
cost that grows with what changed, not with the size of the window.

Finding out what changed used to cost a `SELECT id, rev` over every row on every read, a scan
of the whole table with its blocks (about 8 ms at 8,000 rows). The mirror avoids the scan:

- The store reports the rows each of its own writes touched (`touch`); the next sync fetches
  just those rows again, and a touched row that no longer exists leaves the mirror.
- A commit by any OTHER connection (another TurnStore, in this process or another) shows as a
  new `PRAGMA data_version`; then, and after a write that could not say which rows it touched
  (clear, restore, a failed write), the mirror resyncs in full: `SELECT id, rev`, decoding only
  rows at a revision it has not seen.
- A safety net for a write through this connection that forgot to report: the store-wide
  revision counter may only have moved to a revision one of the fetched rows carries, else
  the mirror resyncs in full. (It catches such a write when it is the latest one.)

Revisions come from one store-wide counter (schema v2), so a row changed in any way, or deleted
and imported again under the same id, never carries a revision it had before. Rows are frozen
values, so the mirror hands out the same (revision, row) objects until the row changes: a
caller that kept the last window can compare it with the new one at C speed (render_cache.py).
"""

from __future__ import annotations

import bisect
import sqlite3
from collections.abc import Iterable

from runtime.store import row_sql
from runtime.window.plan import RowStat
from runtime.window.rows import Row


class WindowMirror:
    """The window as of the last `sync`: rows by id with their revision, in id order."""

    def __init__(self) -> None:
        self._rows: dict[int, tuple[int, Row]] = {}
        self._order: list[int] = []  # ids, ascending
        self._revised: list[tuple[int, Row]] = []  # self._rows[i] for i in self._order
        self._tokens = 0
        self._version: int | None = None  # data_version at the last sync; None: resync in full
        self._counter = 0  # the revision counter at the last sync
        self._touched: set[int] = set()
        self._stats: dict[int, RowStat] = {}  # by id: what trimming needs of each row

    def touch(self, ids: Iterable[int]) -> None:
        """Rows this connection inserted, changed or deleted since the last sync."""
        self._touched.update(ids)

    def invalidate(self) -> None:
        """Resync in full at the next sync (rows changed, which ones unknown)."""
        self._version = None
        self._stats = {}  # rebuilt by the resync: none can be trusted to match its row

    def sync(self, conn: sqlite3.Connection) -> None:
        """Bring the mirror up to date; call inside a read transaction."""
        try:
            # The first read pins the transaction's snapshot; data_version is then its own.
            counter = row_sql.revision_counter(conn)
            version = row_sql.data_version(conn)
            if version != self._version or not self._refresh(conn, counter):
                self._resync(conn)
        except BaseException:
            self.invalidate()  # half updated (a row that would not decode, a cancel): start over
            raise
        self._version, self._counter = version, counter
        self._touched.clear()

    def rows(self) -> list[Row]:
        return [row for _, row in self._revised]

    def revised(self) -> list[tuple[int, Row]]:
        """(revision, row) pairs in window order (a copy: the mirror changes at the next sync)."""
        return self._revised.copy()

    def stats(self) -> list[RowStat]:
        """What trimming needs of each row, in window order. A row's stat is made when the
        row enters or changes, so planning a trim costs a walk, not a rebuild, of the window."""
        stats = self._stats
        return [stats[i] for i in self._order]

    def totals(self) -> tuple[int, int]:
        """(rows, tokens) of the window."""
        return len(self._order), self._tokens

    def _refresh(self, conn: sqlite3.Connection, counter: int) -> bool:
        """Fetch the touched rows again; False when the mirror cannot be trusted to be whole."""
        if not self._touched:
            return counter == self._counter
        touched = sorted(self._touched)
        found = row_sql.select_rows_by_id(conn, touched)
        if counter != self._counter and counter not in {rev for rev, _ in found.values()}:
            return False
        gone = {i for i in touched if i not in found and i in self._rows}
        for i in gone:
            self._tokens -= self._rows.pop(i)[1].tokens
            self._stats.pop(i, None)
        if gone:
            self._drop(gone)
        order, revised = self._order, self._revised
        for i, entry in found.items():
            old = self._rows.get(i)
            if old is not None:
                self._tokens -= old[1].tokens
                revised[bisect.bisect_left(order, i)] = entry
            elif not order or i > order[-1]:
                order.append(i)
                revised.append(entry)
            else:  # an id imported below the newest one
                at = bisect.bisect_left(order, i)
                order.insert(at, i)
                revised.insert(at, entry)
            self._rows[i] = entry
            self._stats[i] = RowStat.of(entry[1])
            self._tokens += entry[1].tokens
        return True

    def _drop(self, gone: set[int]) -> None:
        """Take the `gone` ids (already out of `_rows`) out of the window order: a slice
        when they are its oldest rows, as after a trim, else a walk."""
        order = self._order
        if order[: len(gone)] == sorted(gone):
            del order[: len(gone)]
            del self._revised[: len(gone)]
        else:
            self._order = [i for i in order if i not in gone]
            self._revised = [self._rows[i] for i in self._order]

    def _resync(self, conn: sqlite3.Connection) -> None:
        revisions = row_sql.select_revisions(conn)
        known = self._rows
        stale = [i for i, rev in revisions if known.get(i, (None,))[0] != rev]
        fresh = row_sql.select_rows_by_id(conn, stale) if stale else {}
        # Rebuilt from the ids present now, so rows deleted since are dropped.
        self._rows = {i: fresh[i] if i in fresh else known[i] for i, _ in revisions}
        kept = self._stats
        self._stats = {
            i: kept[i] if i in kept and i not in fresh else RowStat.of(self._rows[i][1])
            for i, _ in revisions
        }
        self._order = [i for i, _ in revisions]
        self._revised = [self._rows[i] for i in self._order]
        self._tokens = sum(row.tokens for _, row in self._rows.values())
