"""The dashboard's read side: tail host.sqlite's event log, panel status rows and meta.

The file is opened read-only (URI `mode=ro`), so the viewer can never change what the host
wrote. A tail starts from the newest `backlog` events, then polls every `interval` seconds;
`PRAGMA data_version` changes only when another connection commits, so a quiet host costs
one pragma per poll and no query. Rows become typed events through the catalogue's `decode`;
a row this version cannot read is an `UnknownEvent`, never a crash.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

import aiosqlite
import anyio

from panels.hostdb import (
    PANEL_TABLE_INFO,
    HostDbError,
    Logged,
    PanelRow,
    logged_from_row,
    panel_from_row,
    panel_query,
    panel_select,
)

BACKLOG = 500  # events shown from before the viewer started
BATCH = 1_000  # events read per query while catching up
INTERVAL = 0.025  # while the host writes: most of the commit-to-screen time is this wait
IDLE_INTERVAL = 0.2  # a quiet host: an eighth of the polls (most of an idle viewer's cost)
QUIET = 2.0

_EVENT_COLUMNS = "id, ts, panel, kind, data"


@dataclass(frozen=True)
class Changes:
    """What a poll found: new events, and the panel rows and meta when they changed."""

    events: list[Logged] = field(default_factory=list)
    panels: list[PanelRow] | None = None
    meta: dict[str, str] | None = None

    def __bool__(self) -> bool:
        return bool(self.events) or self.panels is not None or self.meta is not None


class Tail:
    """One read-only connection to host.sqlite and the viewer's cursor. Get it from `open_tail`."""

    def __init__(self, conn: aiosqlite.Connection, *, backlog: int = BACKLOG) -> None:
        self._conn = conn
        self._backlog = backlog
        self._cursor: int | None = None  # the last event id seen; None before the first poll
        self._version: int | None = None
        self._panels: list[PanelRow] | None = None
        self._meta: dict[str, str] | None = None

    @property
    def cursor(self) -> int:
        return self._cursor or 0

    async def poll(self) -> Changes:
        """What changed since the last poll (everything, the first time)."""
        version = await self._data_version()
        if version == self._version:
            return Changes()
        self._version = version
        events = await self._read_events()
        panels = await self._read_panels()
        meta = await self._read_meta()
        changed_panels = None if panels == self._panels else panels
        changed_meta = None if meta == self._meta else meta
        self._panels, self._meta = panels, meta
        return Changes(events, changed_panels, changed_meta)

    async def follow(
        self, interval: float = INTERVAL, idle_interval: float = IDLE_INTERVAL
    ) -> AsyncIterator[Changes]:
        """Every non-empty poll's changes, until cancelled. Polls every `interval` while the
        host writes, and every `idle_interval` once it has been quiet for `QUIET` seconds."""
        quiet_since = anyio.current_time()
        while True:
            changes = await self.poll()
            now = anyio.current_time()
            if changes:
                quiet_since = now
                yield changes
            await anyio.sleep(interval if now - quiet_since < QUIET else idle_interval)

    async def _data_version(self) -> int:
        rows = list(await self._conn.execute_fetchall("PRAGMA data_version"))
        return int(rows[0][0]) if rows else 0

    async def _read_events(self) -> list[Logged]:
        if self._cursor is None:
            sql = f"SELECT {_EVENT_COLUMNS} FROM events ORDER BY id DESC LIMIT ?"
            rows = list(await self._conn.execute_fetchall(sql, (self._backlog,)))
            rows.reverse()
            out = [logged_from_row(r) for r in rows]
            self._cursor = out[-1].id if out else 0
            return out
        out = []
        sql = f"SELECT {_EVENT_COLUMNS} FROM events WHERE id > ? ORDER BY id LIMIT ?"
        while True:
            found = await self._conn.execute_fetchall(sql, (self._cursor, BATCH))
            batch = [logged_from_row(r) for r in found]
            out.extend(batch)
            if batch:
                self._cursor = batch[-1].id
            if len(batch) < BATCH:
                return out

    async def _read_panels(self) -> list[PanelRow]:
        # A file an older host wrote lacks the newer columns (read-only: never migrated here).
        info = await self._conn.execute_fetchall(PANEL_TABLE_INFO)
        names = panel_select(str(r[1]) for r in info)
        rows = await self._conn.execute_fetchall(panel_query(names))
        return [panel_from_row(r, names) for r in rows]

    async def _read_meta(self) -> dict[str, str]:
        rows = await self._conn.execute_fetchall("SELECT key, value FROM meta")
        return {str(k): str(v) for k, v in rows}


def database_uri(path: Path, mode: str) -> str:
    """The SQLite URI of an existing host.sqlite (`mode` ro or rw: never created here);
    `HostDbError` when there is none."""
    if not path.is_file():
        raise HostDbError("no host database here; has the team been started (`mnemara up`)?",
                          path=path)  # fmt: skip
    return f"{path.resolve().as_uri()}?mode={mode}"


@asynccontextmanager
async def open_tail(path: Path, *, backlog: int = BACKLOG) -> AsyncIterator[Tail]:
    """Open host.sqlite read-only for the block; `HostDbError` when there is none."""
    conn = await aiosqlite.connect(database_uri(path, "ro"), uri=True)
    try:
        await conn.execute_fetchall("PRAGMA busy_timeout = 5000")
        yield Tail(conn, backlog=backlog)
    finally:
        await conn.close()
