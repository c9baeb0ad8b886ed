"""The host: runs a team's panels side by side on trio (DESIGN.md sections 2-4).

`Host(team).serve()` / `open_host(team)`; `run_host(path)` is the process entry point.
Modules: host (wiring and shutdown), supervisor + restart (lives and the pure restart
policy), panel (state, flags, control verbs), life + turn (claim, run, settle), delivery
(what a turn is fed), bustools (send / ack / list), asker (headless approvals), control
(viewers' commands), digests (the watchdog's digest service), eventlog + coalesce (the
event writer), wakeup (bus watching), instances (instance creation and team overrides),
drivers (the CLI, live or rehearsal), states (the pure state machine), teambudget.
"""

from panels.host.host import Host, open_host
from panels.host.restart import Failure, GiveUp, Restart, RestartPolicy, decide
from panels.host.states import PanelState

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
