"""The host's event log writer: panels emit typed events without waiting; one task writes them.

`emit` takes an event of the catalogue (panels/hostdb/catalogue.py), never blocks and never
touches SQLite: it coalesces text deltas (coalesce.py) and queues the rest. `serve` flushes
the queue every `interval` seconds in one transaction, writes the panels' status rows when
they changed, and prunes old events now and then. With nothing queued it sleeps until an
event comes, looking at the status rows (which also move without an event: an inbox that
fills) every `idle_interval` seconds: an idle host wakes about once a second, not ten
times. `commit` writes at once what a life must not lose to a kill -9 (a batch still queued
dies with the process). Listeners (the demo's narrator, tests) get each written event in
order, as `Logged`. Live listeners (the solo REPL face) get every event as it is emitted,
text deltas uncoalesced (`TextDelta`), in emit order: they are called synchronously from the
emitting task and must not block or raise.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable

import anyio
import anyio.abc

from panels.host.control.coalesce import Coalescer, Stamped
from panels.hostdb import HostDb, HostEvent, Logged, PanelRow
from panels.hostdb.catalogue import TextDelta
from panels.hostdb.control import CommandAnswer

Listener = Callable[[Logged], None]
LiveListener = Callable[[HostEvent], None]
StatusSource = Callable[[], list[PanelRow]]


class EventLog:
    def __init__(
        self,
        db: HostDb,
        *,
        interval: float = 0.1,
        idle_interval: float = 1.0,
        keep_events: int = 50_000,
        keep_commands: int = 5_000,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.db = db
        self.interval = interval
        self.idle_interval = idle_interval
        self.keep_events = keep_events
        self.keep_commands = keep_commands
        self.clock = clock
        self._coalescer = Coalescer()
        self._queue: list[Stamped] = []
        self._listeners: list[Listener] = []
        self._live: list[LiveListener] = []
        self._status: StatusSource | None = None
        self._last_status: list[PanelRow] = []
        self._flushed = anyio.Event()
        self._written = 0
        self._writing = anyio.Lock()  # one flush at a time, so batches are written in order
        self._emitted = anyio.Event()  # set by emit and text: an idle serve wakes for it

    def listen(self, listener: Listener) -> None:
        self._listeners.append(listener)

    def listen_live(self, listener: LiveListener) -> None:
        self._live.append(listener)

    def track_status(self, source: StatusSource) -> None:
        self._status = source

    def emit(self, event: HostEvent) -> None:
        self._queue.extend(self._coalescer.event(self.clock(), event))
        self._emitted.set()
        for live in self._live:
            live(event)

    def text(self, panel: str, piece: str) -> None:
        self._queue.extend(self._coalescer.text(panel, piece, self.clock()))
        self._emitted.set()
        delta = TextDelta(panel=panel, text=piece)
        for live in self._live:
            live(delta)

    async def commit(self, *last: HostEvent, answer: CommandAnswer | None = None) -> None:
        """Write everything emitted so far, then `last`, before going on: for the events a
        life must not lose (its start, a stored turn, a halt, a dead letter), whose action is
        not done until its event is on disk. With `answer`, the control-table command is
        marked finished in the same transaction as `last`. Cheap when there is nothing."""
        with anyio.CancelScope(shield=True):
            async with self._writing:
                for event in last:  # queued under the lock: no other flush can split them
                    self.emit(event)
                await self._flush(answer)

    async def flush(self) -> None:
        """Write what is queued (and the status rows if they changed) now."""
        async with self._writing:
            await self._flush()

    async def _flush(self, answer: CommandAnswer | None = None) -> None:
        now = self.clock()
        self._queue.extend(self._coalescer.due(now))
        batch, self._queue = self._queue, []
        if batch or answer is not None:
            ids = await self.db.append(batch, answer=answer)
            for ident, (ts, event) in zip(ids, batch, strict=True):
                written = Logged(ident, ts, event)
                for listener in self._listeners:
                    listener(written)
            self._written += len(batch)
        if self._status is not None:
            rows = self._status()
            if _changed(rows, self._last_status):
                await self.db.upsert_panels(rows)
                self._last_status = rows
        if self._written >= 1_000:
            self._written = 0
            await self.db.prune(keep_events=self.keep_events, keep_commands=self.keep_commands)
        flushed, self._flushed = self._flushed, anyio.Event()
        flushed.set()

    async def write_status(self) -> None:
        """Write the panels' status rows now, without flushing events (readiness: a viewer
        such as `send` must find every panel as soon as the host says it is up)."""
        if self._status is not None:
            rows = self._status()
            await self.db.upsert_panels(rows)
            self._last_status = rows

    async def flushed(self) -> None:
        """Wait for the next flush to finish (tests and shutdown)."""
        await self._flushed.wait()

    async def serve(
        self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        task_status.started()
        try:
            while True:
                await self._next_tick()
                if self._queue or self._status is not None:
                    # Shielded: the batch leaves the queue before it is written, so a flush
                    # cancelled half-way would lose it.
                    with anyio.CancelScope(shield=True):
                        await self.flush()
        finally:
            # Whatever is left goes out, drained of coalesced text; bounded, as the host stops.
            with anyio.CancelScope(shield=True), anyio.move_on_after(5):
                self._queue.extend(self._coalescer.drain(self.clock()))
                await self.flush()

    async def _next_tick(self) -> None:
        """One `interval` while anything waits to be written; when nothing does, until an
        event is emitted (then one `interval` more, so what follows it joins its batch) or
        `idle_interval` passes."""
        if not self._queue and not self._coalescer.pending:
            with anyio.move_on_after(self.idle_interval):
                await self._emitted.wait()
        self._emitted = anyio.Event()
        await anyio.sleep(self.interval)


def _changed(rows: list[PanelRow], before: list[PanelRow]) -> bool:
    """Whether any figure but the time stamp changed (the stamp alone is no news)."""

    def key(r: PanelRow) -> PanelRow:
        return dataclasses.replace(r, updated_ts=0.0)

    return [key(r) for r in rows] != [key(r) for r in before]
