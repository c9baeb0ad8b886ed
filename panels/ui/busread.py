"""Following the team's bus for a widget: `follow_bus` polls peerbus's read-only view and hands
each new snapshot on; `bus_counts` is what a snapshot holds, counted by status; `BusFollower`
is a widget that does so while it is shown.

The bus pane (buspane.py) and the team cell (teamcell.py) are both `BusFollower`s, each at its
own pace. Nothing is claimed or written: a viewer beside the panels.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass
from typing import ClassVar

import anyio
from textual.containers import Vertical
from textual.reactive import reactive
from textual.worker import Worker, WorkerError

from panels.text import clean
from peerbus import BusSnapshot, PeerbusError, open_view, parse_location

ABSENT_RECHECK = 1.0  # seconds between looks for a bus file the host has not made yet


@dataclass(frozen=True)
class BusCounts:
    """The newest deliveries of a snapshot by status (queued, claimed, acked...), and its dead
    letters. `pending` is what waits for a recipient: queued or claimed, not yet acked."""

    by_status: tuple[tuple[str, int], ...] = ()
    dead: int = 0

    @property
    def pending(self) -> int:
        return sum(n for status, n in self.by_status if status in ("queued", "claimed"))

    @property
    def shown(self) -> int:
        return sum(n for _, n in self.by_status)


def bus_counts(snapshot: BusSnapshot) -> BusCounts:
    counts: dict[str, int] = {}
    for item in snapshot.flow:
        counts[item.status] = counts.get(item.status, 0) + 1
    return BusCounts(tuple(sorted(counts.items())), len(snapshot.dead))


async def follow_bus(
    location: str,
    *,
    show: Callable[[BusSnapshot], None],
    say: Callable[[str], None],
    interval: float,
    retry_hint: str = "",
) -> None:
    """Poll the bus at `location` every `interval` seconds until cancelled, calling `show` with
    each snapshot that changed. A SQLite bus the host has not made yet is waited for (`say`
    tells so). Returns once the bus cannot be read, having said why (and `retry_hint`)."""
    where = parse_location(location)
    file = anyio.Path(where.path) if where.scheme == "sqlite" else None
    while file is not None and not await file.is_file():  # the host makes it as it starts
        say(f"no bus file yet at {clean(location, 200)}")
        await anyio.sleep(ABSENT_RECHECK)
    try:
        async with open_view(location) as view:
            while True:
                snapshot = await view.poll()
                if snapshot is not None:
                    show(snapshot)
                await anyio.sleep(interval)
    except (sqlite3.Error, PeerbusError) as exc:
        hint = f"; {retry_hint}" if retry_hint else ""
        say(f"cannot read the bus at {clean(location, 200)} ({clean(exc)}){hint}")


class BusFollower(Vertical):
    """A widget that reads the bus at `bus_location` while it is shown (`active`), through at
    most one worker: hidden, or given another bus, it stops reading (and waits until the
    reading is gone). Subclasses say what a snapshot shows (`show_bus`) and where a notice
    goes (`say_bus`)."""

    INTERVAL: ClassVar[float] = 1.0  # seconds between polls while shown
    RETRY_HINT: ClassVar[str] = ""  # how to read again after the bus could not be read

    bus_location: reactive[str | None] = reactive(None, layout=False)
    active: reactive[bool] = reactive(False)

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._reading: Worker[None] | None = None

    def show_bus(self, snapshot: BusSnapshot) -> None:
        raise NotImplementedError

    def say_bus(self, text: str) -> None:
        raise NotImplementedError

    async def watch_bus_location(self) -> None:
        await self._stop_reading()  # another host life may name another file
        self._read_while_shown()

    async def watch_active(self, active: bool) -> None:
        self.display = active
        if active:
            self._read_while_shown()
        else:
            await self._stop_reading()

    async def on_unmount(self) -> None:
        await self._stop_reading()

    def _read_while_shown(self) -> None:
        if self.bus_location is None or not self.active or self._reading is not None:
            return
        self._reading = self.run_worker(self._read(self.bus_location), exit_on_error=False)

    async def _read(self, location: str) -> None:
        await follow_bus(location, show=self.show_bus, say=self.say_bus,
                         interval=self.INTERVAL, retry_hint=self.RETRY_HINT)  # fmt: skip
        self._reading = None  # the bus could not be read: shown again, it tries again

    async def _stop_reading(self) -> None:
        worker, self._reading = self._reading, None
        if worker is not None:
            # Wait until it is gone: its connection closes in its own `finally`, on this loop.
            worker.cancel()
            with suppress(WorkerError):
                await worker.wait()
