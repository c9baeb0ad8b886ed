"""Waking idle panels: one bus watcher for the whole host, one wake-up flag per panel.

Sixteen idle panels each polling the bus would cost sixteen stat loops; instead one task per
bus file (the team's, and the host's own operator bus when the team's is foreign) waits on
the bus's change detection and sets every panel's wake-up flag. A panel takes the
flag's current event *before* it claims, so a change that lands between its claim and its
wait still wakes it. Control commands (resume, inbox on) set the flag too.
"""

from __future__ import annotations

from collections.abc import Callable

import anyio
import anyio.abc

from peerbus import Bus


class Wakeup:
    """A flag that can be waited on again and again: `set` wakes whoever waits now."""

    def __init__(self) -> None:
        self._event = anyio.Event()

    @property
    def event(self) -> anyio.Event:
        return self._event

    def set(self) -> None:
        event, self._event = self._event, anyio.Event()
        event.set()


class BusWatch:
    """Sets every registered wake-up when any of its buses changes, and every `recheck`
    seconds anyway (an expired lease or an ended nack delay changes nothing on disk)."""

    def __init__(self, *buses: Bus, recheck: float = 5.0) -> None:
        # The same Bus given twice (the operator's bus is the team's) is watched once.
        self.buses = tuple({id(bus): bus for bus in buses}.values())
        self.recheck = recheck
        self._targets: list[Callable[[], None]] = []

    def add(self, wake: Callable[[], None]) -> None:
        self._targets.append(wake)

    def wake_all(self) -> None:
        for wake in self._targets:
            wake()

    async def serve(
        self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        async with anyio.create_task_group() as tg:
            for bus in self.buses:
                await tg.start(self._watch, bus)
            task_status.started()

    async def _watch(
        self, bus: Bus, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        since = await bus.generation()
        task_status.started()
        while True:
            await bus.wait_for_change(self.recheck, since=since)
            since = await bus.generation()
            self.wake_all()
