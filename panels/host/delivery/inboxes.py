"""What waits for each panel on the bus, and what it gave up: the status line's inbox count.

Counting costs a query per recipient (peerbus `stats`), too much to run on every status
write (ten a second while busy). One task counts instead, when the bus changed and at most
once per `interval` seconds; with no change it counts again every `recheck` seconds anyway,
since an expired lease puts a message back in the inbox without touching the file. The
counts go on the runners (`waiting`, `dead_letters`), and the event log's next flush writes
them with the rest of the status row. The dead-letter count is the bus's own, so a retry
(the `retry` verb, `mnemara bus retry`) brings it down again. When the team's bus is foreign,
the operator routes are on the host's own bus (services.py), and both buses are counted.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import anyio
import anyio.abc

from panels.host.delivery.feed import operator_route
from panels.host.turns.panel import PanelRunner
from peerbus import BusBackend, BusStats, PeerbusError


@dataclass(frozen=True)
class Counts:
    waiting: int  # owed and not claimed now (both routes)
    dead: int  # given up (both routes)


def count_inboxes(
    stats: BusStats, panels: Mapping[str, object], operator: BusStats | None = None
) -> dict[str, Counts]:
    """Each panel's counts over its two routes: its own in `stats` (the team's bus), its
    operator route in `operator` (the operator's bus; None: the same bus). Pure."""
    own = {r.recipient: r for r in stats.recipients}
    ops = own if operator is None else {r.recipient: r for r in operator.recipients}
    out = {}
    for name in panels:
        routes = [t[r] for t, r in ((own, name), (ops, operator_route(name))) if r in t]
        out[name] = Counts(sum(r.waiting for r in routes), sum(r.failed for r in routes))
    return out


async def bus_counts(
    bus: BusBackend, operator_bus: BusBackend, panels: Mapping[str, object]
) -> dict[str, Counts]:
    """`count_inboxes` over the live buses (one query when they are the same)."""
    stats = await bus.stats()
    operator = None if operator_bus is bus else await operator_bus.stats()
    return count_inboxes(stats, panels, operator)


async def serve_inbox_counts(
    bus: BusBackend,
    runners: Mapping[str, PanelRunner],
    *,
    operator_bus: BusBackend | None = None,
    interval: float = 1.0,
    recheck: float = 5.0,
    task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
) -> None:
    """Keep every runner's `waiting` and `dead_letters` up to date, until cancelled."""
    operator_bus = operator_bus or bus
    buses = [bus] if operator_bus is bus else [bus, operator_bus]
    task_status.started()
    while True:
        # Taken before the read: a change during it still ends the wait below.
        since = [await b.generation() for b in buses]
        try:
            counts = await bus_counts(bus, operator_bus, runners)
        except PeerbusError:
            counts = {}  # a busy or troubled bus: the panels say so; count again next time
        for name, found in counts.items():
            runner = runners[name]
            runner.waiting, runner.dead_letters = found.waiting, found.dead
        await anyio.sleep(interval)
        await _any_change(buses, since, recheck)


async def _any_change(buses: list[BusBackend], since: list[int], recheck: float) -> None:
    """Until one of `buses` changed past its `since`, or `recheck` seconds passed."""
    if len(buses) == 1:
        await buses[0].wait_for_change(recheck, since=since[0])
        return
    async with anyio.create_task_group() as tg:

        async def wait(bus: BusBackend, mark: int) -> None:
            await bus.wait_for_change(recheck, since=mark)
            tg.cancel_scope.cancel()  # the first to return ends the others' waits

        for bus, mark in zip(buses, since, strict=True):
            tg.start_soon(wait, bus, mark)
