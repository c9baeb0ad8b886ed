"""One panel as the host keeps it: state, flags, budget, sentinel, and the control verbs.

A `PanelRunner` outlives the panel's lives: when a life fails and the supervisor starts the
next, the budget spent, the halt record and the operator's flags (paused, inbox) carry over,
so a crash cannot reset a budget or undo a halt. The life itself (session, claims, turns)
is in life.py and turn.py. Every control verb here is synchronous and cheap; it sets a flag,
cancels the running turn when the verb stops the panel, and wakes the life's loop.
"""

from __future__ import annotations

import time
from collections import OrderedDict, deque
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import anyio

from panels.host.services import HostServices, TurnContext
from panels.host.states import IN_TURN, PanelState, next_state
from panels.host.wakeup import Wakeup
from panels.hostdb import PanelRow
from panels.team import PanelSpec
from panels.watchdog.slope import SlopeSettings, TurnSpend, budget_slope
from peerbus import Message
from runtime.driver import ToolCallRequest
from runtime.guard.budget import BudgetTracker
from runtime.guard.records import HaltRecord
from runtime.guard.sentinel import Sentinel

if TYPE_CHECKING:
    from runtime.session import Session

_SEEN_CAPACITY = 500


class PanelRunner:
    def __init__(self, spec: PanelSpec, host: HostServices) -> None:
        self.spec = spec
        self.name = spec.name
        self.host = host
        self.state = PanelState.STARTING
        self.detail = ""
        self.paused = spec.paused
        self.inbox_on = True
        self.halt: HaltRecord | None = None
        self.halted_by = ""
        self.epoch = 0
        self.model = spec.model or ""
        self.budget = BudgetTracker(spec.budget)
        self.sentinel = Sentinel(spec.sentinel)
        self.slope = SlopeSettings()
        self.turns = 0
        self.turn: TurnContext | None = None
        self.history: deque[TurnSpend] = deque(maxlen=50)
        self.recent_calls: deque[tuple[float, str]] = deque(maxlen=20)
        self.seen: OrderedDict[int, Message] = OrderedDict()
        self.wakeup = Wakeup()
        self.session: Session | None = None
        self.stopping = False
        self.turn_scope: anyio.CancelScope | None = None
        host.watch.add(self.wakeup.set)

    # -- state --------------------------------------------------------------------------------

    def signal(self, signal: str) -> None:
        self.state = next_state(self.state, signal)

    def set_state(self, state: PanelState, detail: str = "") -> None:
        if state is not self.state or detail != self.detail:
            self.host.log.emit("state", self.name, state=state.value, detail=detail)
        self.state = state
        self.detail = detail

    def resting_state(self) -> PanelState:
        """The state between turns, from the flags."""
        if self.halt is not None:
            return PanelState.OVER_BUDGET if self.halt.source == "budget" else PanelState.HALTED
        return PanelState.PAUSED if self.paused else PanelState.IDLE

    @property
    def in_turn(self) -> bool:
        return self.turn is not None or self.state in IN_TURN

    def blocked(self) -> bool:
        """True while the panel may not start a turn."""
        if self.stopping or self.paused or self.halt is not None:
            return True
        verdict = self.budget.check_before_call()
        if verdict.stop and verdict.record is not None:
            self.halt_now(verdict.record)
            return True
        team = self.host.team_check()
        if team is not None:
            self.halt_now(team)
            return True
        return False

    def remember(self, messages: list[Message]) -> None:
        for message in messages:
            self.seen[message.id] = message
        while len(self.seen) > _SEEN_CAPACITY:
            self.seen.popitem(last=False)

    def status_row(self) -> PanelRow:
        spent = self.budget.snapshot().session
        return PanelRow(
            name=self.name,
            kind=self.spec.kind,
            state=self.state.value,
            detail=self.detail,
            turns=self.turns,
            input_tokens=spent.input_tokens,
            output_tokens=spent.output_tokens,
            usd=round(spent.usd, 6),
            epoch=self.epoch,
            inbox=self.inbox_on,
            model=self.model,
            updated_ts=time.time(),
        )

    # -- the guard: asked before every tool call ------------------------------------------------

    def gate(self, call: ToolCallRequest) -> str | None:
        """Why the call may not run, or None. A stop found here halts the panel."""
        if self.halt is not None:
            return f"The panel is halted: {self.halt.notice()} The call was not run."
        turn = self.turn
        if turn is not None and turn.terminal:
            return (
                "You already made your terminal send: this turn is over. End it now, "
                "without further tool calls; replies come in a later turn."
            )
        verdict = self.budget.check_before_call()
        if verdict.stop and verdict.record is not None:
            self.halt_now(verdict.record)
            return verdict.message
        found = self.sentinel.observe_call(call)
        if found.record is not None:
            self.host.log.emit("sentinel", self.name, **found.record.as_dict())
        if found.halt and found.record is not None:
            self.halt_now(found.record)
            return found.record.notice()
        team = self.host.team_check()
        if team is not None:
            self.halt_now(team)
            return team.notice()
        return None

    # -- control verbs -----------------------------------------------------------------------

    def halt_now(self, record: HaltRecord, *, by: str = "host", cancel: bool = True) -> None:
        """Stop the panel: the turn in flight is cancelled, the inbox is left as it is."""
        first = self.halt is None
        self.halt = record
        if first:
            self.host.log.emit("halt", self.name, by=by, **record.as_dict())
            if self.session is not None:
                self.session.debug.write("halt", record.rule, **record.as_dict())
        if cancel and self.turn_scope is not None:
            self.turn_scope.cancel()
        self.halted_by = by
        self.set_state(self.resting_state(), self.halt_detail())
        self.wakeup.set()

    def halt_detail(self) -> str:
        if self.halt is None:
            return ""
        if self.halted_by == "host":
            return self.halt.notice()
        return f"halted by {self.halted_by}: {self.halt.message}"

    def pause(self, reason: str = "") -> None:
        self.paused = True
        if not self.in_turn:
            self.set_state(self.resting_state(), reason)
        self.wakeup.set()

    def resume(self) -> None:
        """Clear pause and halt; the budget and sentinel start over from here."""
        self.paused = False
        if self.halt is not None:
            self.halt = None
            self.budget.resume()
            self.sentinel.reset()
            self.history.clear()
        if not self.in_turn and self.state is not PanelState.FAILED:
            self.set_state(PanelState.IDLE)
        self.wakeup.set()

    def set_inbox(self, on: bool) -> None:
        self.inbox_on = on
        self.host.log.emit("inbox", self.name, on=on)
        self.wakeup.set()

    def set_model(self, model: str) -> None:
        self.model = model
        if self.session is not None:
            self.session.config = self.session.config.model_copy(update={"model": model})
        self.host.log.emit("model", self.name, model=model)

    def stop_turn(self) -> None:
        if self.turn_scope is not None:
            self.turn_scope.cancel()

    def end_of_turn_checks(self, spend: TurnSpend) -> None:
        """Record the turn's spend and run the host's own triggers (sentinel, slope)."""
        self.history.append(spend)
        world = self.sentinel.end_turn()
        if world.halt and world.record is not None:
            self.halt_now(world.record)
        last = list(self.history)[-self.slope.turns :]
        why = budget_slope(list(self.history), self.slope)
        if why is not None and self.halt is None:
            self.halt_now(
                HaltRecord(
                    source="budget",
                    rule="budget_slope",
                    message=why,
                    turn=self.turns,
                    at=datetime.now(UTC),
                    figures=tuple((f"turn_{i}", float(t.tokens)) for i, t in enumerate(last)),
                )
            )
