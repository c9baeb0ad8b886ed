"""Following the team's bus for a widget: `follow_bus` polls peerbus's read-only view and hands
each new snapshot on; `bus_counts` is what a snapshot holds, counted by status.

The bus pane (buspane.py) and the team cell (teamcell.py) each follow the bus this way while
they are shown, at their own pace. Nothing is claimed or written: a viewer beside the panels.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass

import anyio

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
