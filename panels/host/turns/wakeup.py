"""Waking idle panels: one bus watcher for the whole host, one wake-up flag per panel.

Each panel registers its routes, (bus, recipient) pairs: its peer inbox on the team's bus
and its operator route on the operator's bus. One task per route waits on the bus's change
detection for that recipient and sets the flags of the panels behind it, so a message to
one panel wakes that panel and no other (a broadcast wakes them all: it concerns every
recipient). A flag added without routes wakes on any change of any watched bus, as every
flag did before. A panel takes the flag's current event *before* it claims, so a change
that lands between its claim and its wait still wakes it. Control commands (resume, inbox
on) set the flag too.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable

import anyio
import anyio.abc

from peerbus import BusBackend

Wake = Callable[[], None]


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
    """Sets the wake-ups a change on its buses concerns, and every `recheck` seconds anyway
    (an expired lease or an ended nack delay changes nothing on disk)."""

    def __init__(self, *buses: BusBackend, recheck: float = 5.0) -> None:
        # The same Bus given twice (the operator's bus is the team's) is watched once.
        self.buses = tuple({id(bus): bus for bus in buses}.values())
        self.recheck = recheck
        self._targets: list[Wake] = []
        # (bus, recipient) -> the wake-ups behind that route.
        self._routes: dict[tuple[int, str], tuple[BusBackend, list[Wake]]] = {}
        self._tg: anyio.abc.TaskGroup | None = None

    def add(self, wake: Wake, routes: Iterable[tuple[BusBackend, str]] = ()) -> None:
        """Call `wake` on a change that concerns one of `routes` (a bus and the recipient
        claimed on it); without routes, on any change of any watched bus."""
        routes = list(routes)
        if not routes:
            self._targets.append(wake)
            if len(self._targets) == 1 and self._tg is not None:
                for bus in self.buses:
                    self._tg.start_soon(self._watch_any, bus)
        for bus, recipient in routes:
            key = (id(bus), recipient)
            known = self._routes.get(key)
            if known is not None:
                known[1].append(wake)
                continue
            self._routes[key] = (bus, [wake])
            if self._tg is not None:  # added while serving: watch it from now on
                self._tg.start_soon(functools.partial(self._watch, bus, recipient, late=True))

    def wake_all(self) -> None:
        for wake in self._targets:
            wake()
        for _, wakes in self._routes.values():
            for wake in wakes:
                wake()

    async def serve(
        self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        async with anyio.create_task_group() as tg:
            for bus in self.buses:
                await tg.start(self._watch_any, bus)
            for bus, recipient in [(bus, r) for (_, r), (bus, _) in self._routes.items()]:
                await tg.start(functools.partial(self._watch, bus, recipient))
            self._tg = tg
            task_status.started()
            await anyio.sleep_forever()  # keeps the group open to routes added later

    async def _watch(
        self,
        bus: BusBackend,
        recipient: str,
        *,
        late: bool = False,
        task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        """One route: its recipient's changes (and the periodic recheck) wake its panels.
        A route added while serving wakes them once as soon as it is watched: what came
        before that is theirs to claim."""
        since = await bus.generation(recipient=recipient)
        task_status.started()
        wakes = self._routes[(id(bus), recipient)][1]
        if late:
            for wake in wakes:
                wake()
        while True:
            await bus.wait_for_change(self.recheck, recipient=recipient, since=since)
            since = await bus.generation(recipient=recipient)
            for wake in wakes:
                wake()

    async def _watch_any(
        self,
        bus: BusBackend,
        *,
        task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        """Any change of `bus` wakes the flags added without routes; none: no task."""
        if not self._targets:
            task_status.started()
            return
        since = await bus.generation()
        task_status.started()
        while True:
            await bus.wait_for_change(self.recheck, since=since)
            since = await bus.generation()
            for wake in self._targets:
                wake()
