"""The dashboard's write side: queue verbs in host.sqlite's control table.

A verb is a model of the catalogue (panels/hostdb/verbs.py), so it was checked when it was
built; the row written is the one `submit_command` writes, in a `BEGIN IMMEDIATE`
transaction so a busy host makes the write wait instead of failing half way. The host parses
the row again and answers it; the dashboard sees the answer as a `command` event in the tail.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import aiosqlite

from panels.hostdb import INSERT_COMMAND, Verb, command_values
from panels.ui.tail import database_uri


class Sender:
    """One read-write connection to host.sqlite. Get it from `open_sender`."""

    def __init__(self, conn: aiosqlite.Connection, *, by: str) -> None:
        self._conn = conn
        self._by = by

    async def send(self, verb: Verb) -> int:
        """Queue `verb` for the host; returns the command's id."""
        values = command_values(verb, by=self._by, now=time.time())
        await self._conn.execute("BEGIN IMMEDIATE")
        try:
            cursor = await self._conn.execute(INSERT_COMMAND, values)
            ident = int(cursor.lastrowid or 0)
        except BaseException:
            await self._conn.execute("ROLLBACK")
            raise
        await self._conn.execute("COMMIT")
        return ident


@asynccontextmanager
async def open_sender(path: Path, *, by: str = "operator") -> AsyncIterator[Sender]:
    """Open host.sqlite for writing commands (never creating it); `HostDbError` when missing."""
    conn = await aiosqlite.connect(
        database_uri(path, "rw"), uri=True, isolation_level=None, timeout=5.0
    )
    try:
        yield Sender(conn, by=by)
    finally:
        await conn.close()
