"""The host: runs a team's panels side by side on trio (DESIGN.md sections 2-4).

`Host(team).serve()` / `open_host(team)`; `run_headless(path)` is the process entry point.
Rooms: turns/ (a panel's lives and turns: panel, states, supervisor + restart, life + turn,
instances, drivers, confine, wakeup, window verbs, checkpoints, orphans), delivery/ (feed:
what a turn is fed; outbox, sendport, sendlimit, bustools, recipients, inboxes, poison,
tickets, followup, digests), control/ (reader: the control table; dispatch, asker, eventlog +
coalesce, account), loops/ (checks: the host's checks in a panel's guard; graph, rules, state,
text, world, watch: the team's loops). At the top, the face: host (wiring, leases and
shutdown), services, process (the pid file and the headless entry point), thread, solo,
demo, errors.

The names below load on first use, so importing one module of the host
(`panels.host.turns.confine`, say) does not bring `Host` and everything it wires along.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from panels.host.host import Host, open_host
    from panels.host.turns.restart import Failure, GiveUp, Restart, RestartPolicy, decide
    from panels.host.turns.states import PanelState

_HOMES = {
    "Host": "panels.host.host",
    "open_host": "panels.host.host",
    "Failure": "panels.host.turns.restart",
    "GiveUp": "panels.host.turns.restart",
    "Restart": "panels.host.turns.restart",
    "RestartPolicy": "panels.host.turns.restart",
    "decide": "panels.host.turns.restart",
    "PanelState": "panels.host.turns.states",
}

__all__ = [
    "Failure",
    "GiveUp",
    "Host",
    "PanelState",
    "Restart",
    "RestartPolicy",
    "decide",
    "open_host",
]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(home), name)
