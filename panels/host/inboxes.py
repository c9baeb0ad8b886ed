"""What waits for each panel on the bus, and what it gave up: the status line's inbox count.

Counting costs a query per recipient (peerbus `stats`), too much to run on every status
write (ten a second while busy). One task counts instead, when the bus changed and at most
once per `interval` seconds; with no change it counts again every `recheck` seconds anyway,
since an expired lease puts a message back in the inbox without touching the file. The
counts go on the runners (`waiting`, `dead_letters`), and the event log's next flush writes
them with the rest of the status row. The dead-letter count is the bus's own, so a retry
(the `retry` verb, `mnemara bus retry`) brings it down again.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import anyio
import anyio.abc

from panels.host.delivery import operator_route
from panels.host.panel import PanelRunner
from peerbus import Bus, BusStats, PeerbusError


@dataclass(frozen=True)
class Counts:
    waiting: int  # owed and not claimed now (both routes)
    dead: int  # given up (both routes)


def count_inboxes(stats: BusStats, panels: Mapping[str, object]) -> dict[str, Counts]:
    """Each panel's counts over its two routes (its own and its operator route). Pure."""
    by_route = {r.recipient: r for r in stats.recipients}
    out = {}
    for name in panels:
        routes = [by_route[r] for r in (name, operator_route(name)) if r in by_route]
        out[name] = Counts(sum(r.waiting for r in routes), sum(r.failed for r in routes))
    return out


async def serve_inbox_counts(
    bus: Bus,
    runners: Mapping[str, PanelRunner],
    *,
    interval: float = 1.0,
    recheck: float = 5.0,
    task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
) -> None:
    """Keep every runner's `waiting` and `dead_letters` up to date, until cancelled."""
    task_status.started()
    while True:
        # Taken before the read: a change during it still ends the wait below.
        since = await bus.generation()
        try:
            stats = await bus.stats()
        except PeerbusError:
            stats = None  # a busy or troubled bus: the panels say so; count again next time
        if stats is not None:
            for name, found in count_inboxes(stats, runners).items():
                runner = runners[name]
                runner.waiting, runner.dead_letters = found.waiting, found.dead
        await anyio.sleep(interval)
        await bus.wait_for_change(recheck, since=since)
