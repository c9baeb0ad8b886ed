"""The async face of host.sqlite: the sync functions on one connection behind one thread.

As with the bus: every call goes through `anyio.to_thread.run_sync` with a
CapacityLimiter(1), so the connection is used by one thread at a time and the event loop
never blocks on SQLite. `wait_for_change` notices other processes' commits (a viewer's
command) by stat-ing the WAL file each `poll` seconds in the event loop and asking
`PRAGMA data_version` only when the stat moved, or every `backstop` seconds.
"""

from __future__ import annotations

import functools
import os
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar

import anyio

from panels.hostdb import control, events, status
from panels.hostdb.schema import connect, data_version

T = TypeVar("T")


def _stat(path: Path) -> tuple[int, int]:
    try:
        st = os.stat(path)
    except OSError:
        return (0, 0)
    return (st.st_size, st.st_mtime_ns)


class HostDb:
    """One open host.sqlite. Get it from `open_hostdb`."""

    def __init__(self, conn: Any, path: Path, limiter: anyio.CapacityLimiter) -> None:
        self.conn = conn
        self.path = path
        self._limiter = limiter
        self._wal = path.with_name(path.name + "-wal")
        self._version: int | None = None

    async def run(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        return await anyio.to_thread.run_sync(
            functools.partial(fn, self.conn, *args, **kwargs), limiter=self._limiter
        )

    async def append(self, batch: Sequence[events.NewEvent]) -> list[int]:
        return await self.run(events.append_events, batch)

    async def read_events(self, **kwargs: Any) -> list[events.Event]:
        return await self.run(events.read_events, **kwargs)

    async def pending_commands(self) -> list[control.Command]:
        return await self.run(control.pending_commands)

    async def finish_command(self, command_id: int, *, ok: bool, outcome: str) -> None:
        await self.run(control.finish_command, command_id, ok=ok, outcome=outcome)

    async def submit_command(self, verb: str, **kwargs: Any) -> int:
        return await self.run(control.submit_command, verb, **kwargs)

    async def upsert_panels(self, rows: Sequence[status.PanelRow]) -> None:
        await self.run(status.upsert_panels, rows)

    async def set_meta(self, values: dict[str, str]) -> None:
        await self.run(status.set_meta, values)

    async def prune(self, *, keep_events: int, keep_commands: int) -> int:
        pruned = await self.run(events.prune_events, keep=keep_events)
        return pruned + await self.run(control.prune_commands, keep=keep_commands)

    # `timeout` is an answer (False), not a cancellation, as in peerbus's wait_for_change.
    async def wait_for_change(
        self,
        timeout: float,  # noqa: ASYNC109
        *,
        poll: float = 0.05,
        backstop: float = 1.0,
    ) -> bool:
        """Wait until another connection committed; False when `timeout` passed first."""
        if self._version is None:
            self._version = await self.run(data_version)
        signature = _stat(self._wal)
        asked_at = anyio.current_time()
        with anyio.move_on_after(timeout):
            while True:
                now = anyio.current_time()
                moved = _stat(self._wal)
                if moved != signature or now - asked_at >= backstop:
                    signature, asked_at = moved, now
                    version = await self.run(data_version)
                    if version != self._version:
                        self._version = version
                        return True
                await anyio.sleep(poll)
        return False


@asynccontextmanager
async def open_hostdb(path: Path) -> AsyncIterator[HostDb]:
    """Open (creating or migrating) host.sqlite for the block."""
    limiter = anyio.CapacityLimiter(1)
    conn = await anyio.to_thread.run_sync(connect, path, limiter=limiter)
    try:
        db = HostDb(conn, path, limiter)
        # The baseline is taken now, before anything is read, so no later commit is missed.
        db._version = await db.run(data_version)
        yield db
    finally:
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(conn.close, limiter=limiter)
