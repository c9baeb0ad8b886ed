"""The async face of host.sqlite: the sync functions on one connection behind one thread.

As with the bus: every call goes through `anyio.to_thread.run_sync` with a
CapacityLimiter(1), so the connection is used by one thread at a time and the event loop
never blocks on SQLite. Commits by other processes (a viewer's command) are noticed by
sqlitekit's change waiter, the one the bus uses too (an inotify event on the database's
directory for every commit, file stats where inotify is missing, PRAGMA data_version as the
backstop), so a command reaches the host within milliseconds.
"""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar

import anyio

from panels.hostdb import control, events, loopstate, status
from panels.hostdb.catalogue import HostEvent
from panels.hostdb.schema import connect, data_version
from sqlitekit.waiter import ChangeWaiter, WatchOptions
from sqlitekit.watch import watched_paths

T = TypeVar("T")


class HostDb:
    """One open host.sqlite. Get it from `open_hostdb`."""

    def __init__(
        self,
        conn: Any,
        path: Path,
        limiter: anyio.CapacityLimiter,
        *,
        # Stats every 5 ms where inotify is missing (the 20 ms target for a command to be
        # applied keeps its headroom on slower machines); with inotify the host parks on it.
        poll: float = 0.005,
        backstop: float = 1.0,
    ) -> None:
        self.conn = conn
        self.path = path
        self._limiter = limiter
        self._changes = ChangeWaiter(
            watched_paths(path),
            WatchOptions(poll_interval=poll, backstop_interval=backstop),
            self._versions,
        )

    async def run(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        return await anyio.to_thread.run_sync(
            functools.partial(fn, self.conn, *args, **kwargs), limiter=self._limiter
        )

    async def _versions(self) -> tuple[int, ...]:
        return (await self.run(data_version),)

    async def append(
        self,
        batch: Sequence[tuple[float, HostEvent]],
        *,
        answer: control.CommandAnswer | None = None,
    ) -> list[int]:
        return await self.run(events.append_events, batch, answer=answer)

    async def read_events(self, **kwargs: Any) -> list[events.Logged]:
        return await self.run(events.read_events, **kwargs)

    async def pending_commands(self) -> list[control.Command]:
        return await self.run(control.pending_commands)

    async def finish_command(self, command_id: int, *, ok: bool, outcome: str) -> None:
        await self.run(control.finish_command, command_id, ok=ok, outcome=outcome)

    async def upsert_panels(self, rows: Sequence[status.PanelRow]) -> None:
        await self.run(status.upsert_panels, rows)

    async def set_meta(self, values: dict[str, str]) -> None:
        await self.run(status.set_meta, values)

    async def prune(self, *, keep_events: int, keep_commands: int) -> int:
        pruned = await self.run(events.prune_events, keep=keep_events)
        return pruned + await self.run(control.prune_commands, keep=keep_commands)

    async def load_loop_rows(self) -> list[loopstate.LoopRow]:
        return await self.run(loopstate.load_loop_rows)

    async def save_loop_rows(
        self,
        rows: Sequence[loopstate.LoopRow],
        dropped: Sequence[tuple[str, str]] = (),
        *,
        keep: int,
    ) -> int:
        return await self.run(loopstate.save_loop_rows, rows, dropped, keep=keep)

    async def generation(self) -> int:
        """The change counter now: pass it to `wait_for_change` after reading."""
        return await self._changes.refresh()

    def poke(self) -> None:
        """Something changed that the file cannot show (a command given in this process)."""
        self._changes.bump()

    # `timeout` is an answer (False), not a cancellation, as in peerbus's wait_for_change.
    async def wait_for_change(self, timeout: float, *, since: int) -> bool:  # noqa: ASYNC109
        """Wait until the file changed (or `poke`) after generation `since`; False when
        `timeout` passed first."""
        with anyio.move_on_after(timeout):
            await self._changes.wait_past(since)
            return True
        return False


@asynccontextmanager
async def open_hostdb(path: Path) -> AsyncIterator[HostDb]:
    """Open (creating or migrating) host.sqlite for the block."""
    limiter = anyio.CapacityLimiter(1)
    conn = await anyio.to_thread.run_sync(connect, path, limiter=limiter)
    try:
        db = HostDb(conn, path, limiter)
        await db.generation()  # the baseline, taken before anything is read
        yield db
    finally:
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(conn.close, limiter=limiter)
