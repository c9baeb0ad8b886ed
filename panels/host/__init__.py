"""The host: runs a team's panels side by side on trio (DESIGN.md sections 2-4).

`Host(team).serve()` / `open_host(team)`; `run_headless(path)` is the process entry point.
Modules: host (wiring, leases and shutdown), supervisor + restart (lives and the pure restart
policy), panel (state, flags, the panel's one guard), checks (the host's checks in that
guard: team budget, terminal sends, budget slope), life + turn (claim, run, settle),
delivery (what a turn is fed), dispatch (the one dispatcher of verbs), control (the control
table's reader), window (the window verbs), tickets (input tickets), bustools (send / ack /
list), asker (headless approvals), digests (the watchdog's digest service), eventlog +
coalesce (the event writer), wakeup (bus watching), instances (instance creation and team
overrides), drivers (the CLI, live or rehearsal), states (the pure state machine), solo
(an instance as a team of one), process (the pid file and the headless entry point), demo.

The names below load on first use, so importing one module of the host (`panels.host.confine`,
say) does not bring `Host` and everything it wires along.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from panels.host.host import Host, open_host
    from panels.host.restart import Failure, GiveUp, Restart, RestartPolicy, decide
    from panels.host.states import PanelState

_HOMES = {
    "Host": "panels.host.host",
    "open_host": "panels.host.host",
    "Failure": "panels.host.restart",
    "GiveUp": "panels.host.restart",
    "Restart": "panels.host.restart",
    "RestartPolicy": "panels.host.restart",
    "decide": "panels.host.restart",
    "PanelState": "panels.host.states",
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
