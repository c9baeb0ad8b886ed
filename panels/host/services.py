"""What every panel of a host shares: the team, the buses, the log, the slots, the drivers.

One `HostServices` is built by the host and handed to each `PanelRunner`; nothing here is
global, and nothing here knows the runners (the host holds them). `TurnContext` is the state
of one running turn that the bus tools and the host's guard checks read.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import anyio

from panels.host.control.asker import Approvals
from panels.host.control.eventlog import EventLog
from panels.host.delivery.followup import Unsent
from panels.host.loops.watch import LoopWatch
from panels.host.turns.checkpointer import Checkpointer
from panels.host.turns.wakeup import BusWatch, Wakeup
from panels.team import PanelSpec, TeamSpec
from peerbus import BusBackend, Message
from runtime.memory import Memory
from runtime.turn.driver import AgentDriver

DriverFactory = Callable[[PanelSpec], AgentDriver]


@dataclass
class HostServices:
    team: TeamSpec
    bus: BusBackend  # the team's: peer messages and every send
    # Where operator input waits (the operator routes): the team's own bus object when that is
    # the default one; the host's own file when the team's bus is foreign, since other
    # programs read a foreign table and operator input must never reach them.
    operator_bus: BusBackend
    log: EventLog
    approvals: Approvals
    watch: BusWatch
    drivers: DriverFactory
    slots: anyio.CapacityLimiter
    home: Path | None = None
    clock: Callable[[], float] = time.monotonic
    # Seconds a claimed batch stays leased to the panel (a turn longer than this is fine:
    # only this panel claims its route, and a restart releases its leases at once).
    lease: float = 900.0
    idle_recheck: float = 30.0
    turn_ended: Wakeup = field(default_factory=Wakeup)
    # Give a failed turn's operator input back for another try (True), or ack it (False).
    redeliver_failed_input: bool = True
    # The team's shared wiki, graph and index (`[team] memory = "shared"`), or None.
    shared_memory: Memory | None = None
    # The team's message graph and its loop rules (loops/watch.py); None: not watched.
    loops: LoopWatch | None = None
    # Each panel's checkpoints of its files, made on first use (checkpoints.py).
    checkpointers: dict[str, Checkpointer] = field(default_factory=dict)


@dataclass
class TurnContext:
    """One running turn, as the bus tools and the host's guard checks see it."""

    number: int
    delivered: dict[int, Message]
    started_at: float
    terminal: bool = False
    sends: int = 0
    tool_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    usd: float = 0.0
    call_names: dict[str, str] = field(default_factory=dict)  # tool_use_id -> tool name
    follow_up: int = 0  # which follow-up round this turn is (followup.py); 0: not one
    unsent: list[Unsent] = field(default_factory=list)  # refused for the turn's limit
