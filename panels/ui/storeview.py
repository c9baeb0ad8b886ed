"""The context viewer's read side: a panel's turn store, read-only, and where its tokens go.

The store is opened with URI `mode=ro` (as tail.py opens host.sqlite), so the viewer can
never change it: every change is a verb the host applies between turns. `PRAGMA
data_version` changes only when another connection commits, so a poll of a quiet store costs
one pragma. Rows and slots are decoded with the store's own codec. `budget` is pure: the
parts of the next request's input, each with its token count and whether that count was
reported by the model service or estimated.
"""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import aiosqlite

from runtime.errors import StoreError
from runtime.instance.config import InstanceConfig
from runtime.store.codec import ROW_COLUMNS, SLOT_COLUMNS, decode_row, decode_slot
from runtime.window.budget import Part, input_budget
from runtime.window.inspect import SUMMARY_META_KEYS, summarize
from runtime.window.rows import Row, Slot


@dataclass(frozen=True)
class WindowState:
    """What one read of the store found."""

    rows: list[Row]
    slots: list[Slot]
    meta: dict[str, str]


class StoreView:
    """One read-only connection to a turn store. Get it from `open_store_view`."""

    def __init__(self, conn: aiosqlite.Connection, path: Path) -> None:
        self._conn = conn
        self.path = path
        self._version: int | None = None

    async def poll(self) -> WindowState | None:
        """The store's rows, slots and summary meta; None when nothing changed since the last
        poll. `StoreError` (naming the file) when it cannot be read."""
        try:
            rows = list(await self._conn.execute_fetchall("PRAGMA data_version"))
            version = int(rows[0][0]) if rows else 0
            if version == self._version:
                return None
            state = await self._read()
        except sqlite3.Error as exc:
            raise StoreError(f"{self.path}: cannot be read as a turn store ({exc})",
                             path=self.path) from None  # fmt: skip
        self._version = version
        return state

    async def _read(self) -> WindowState:
        # One read transaction: rows, slots and meta come from the same commit.
        await self._conn.execute("BEGIN")
        try:
            found = await self._conn.execute_fetchall(
                f"SELECT {ROW_COLUMNS} FROM window_rows ORDER BY id"
            )
            slots = await self._conn.execute_fetchall(
                f"SELECT {SLOT_COLUMNS} FROM slots ORDER BY position, label"
            )
            marks = ",".join("?" * len(SUMMARY_META_KEYS))
            meta = await self._conn.execute_fetchall(
                f"SELECT key, value FROM meta WHERE key IN ({marks})", SUMMARY_META_KEYS
            )
        finally:
            await self._conn.execute("COMMIT")
        return WindowState(
            rows=[decode_row(tuple(r)) for r in found],
            slots=[decode_slot(tuple(s)) for s in slots],
            meta={str(k): str(v) for k, v in meta if v},
        )


def store_uri(path: Path) -> str:
    """The read-only SQLite URI of an existing turn store; `StoreError` when there is none."""
    if not path.is_file():
        raise StoreError(f"{path}: no turn store here; has the panel run yet?", path=path)
    return f"{path.resolve().as_uri()}?mode=ro"


@asynccontextmanager
async def open_store_view(path: Path) -> AsyncIterator[StoreView]:
    """Open the turn store at `path` read-only (never creating it); `StoreError` naming the
    file when it is missing or not a database."""
    uri = store_uri(path)
    try:
        conn = await aiosqlite.connect(uri, uri=True, isolation_level=None)
    except sqlite3.Error as exc:
        raise StoreError(f"{path}: cannot be opened ({exc})", path=path) from None
    try:
        await conn.execute_fetchall("PRAGMA busy_timeout = 5000")
        yield StoreView(conn, path)
    finally:
        await conn.close()


def budget(state: WindowState, role_text: str | None, config: InstanceConfig) -> list[Part]:
    """Where the next request's input tokens go (runtime/window/budget.py, which the REPL's
    `/context` shares)."""
    summary = summarize(state.rows, state.slots, config, state.meta)
    return input_budget(state.rows, state.slots, summary, role_text)
