"""One panel as the host keeps it: state, flags, its one guard, and what the verbs change.

A `PanelRunner` outlives the panel's lives: when a life fails and the supervisor starts the
next, the guard (budget spent, what the sentinel saw, the halt) and the operator's flags
(paused, inbox) carry over, so a crash cannot reset a budget or undo a halt. The life itself
(session, claims, turns) is in life.py and turn.py; the verbs are applied by dispatch.py.
Every method here is synchronous and cheap: it sets a flag, cancels the running turn when
the verb stops the panel, and wakes the life's loop.
"""

from __future__ import annotations

import time
from collections import OrderedDict, deque
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

import anyio

from panels.host.delivery.feed import operator_route
from panels.host.delivery.poison import FailureBook
from panels.host.delivery.recipients import recipients_of
from panels.host.delivery.sendlimit import SendLimiter
from panels.host.loops.checks import HostChecks
from panels.host.services import HostServices, TurnContext
from panels.host.turns.states import IN_TURN, PanelState, next_state
from panels.host.turns.wakeup import Wakeup
from panels.hostdb import PanelRow
from panels.hostdb.catalogue import (
    Halted,
    InboxSwitched,
    ModelChanged,
    Resumed,
    ShadowHalt,
    StateChanged,
)
from panels.team import PanelSpec
from peerbus import Message
from runtime.guard.budget import Spend
from runtime.guard.guard import Guard, GuardSettings, NotStarted
from runtime.guard.records import HaltRecord

if TYPE_CHECKING:
    from panels.host.delivery.sendport import Outbox
    from runtime.turn.session import Session

_SEEN_CAPACITY = 500


class PanelRunner:
    def __init__(
        self,
        spec: PanelSpec,
        host: HostServices,
        *,
        team_spends: Callable[[], Sequence[Spend]] = lambda: (),
    ) -> None:
        self.spec = spec
        self.name = spec.name
        self.host = host
        self.state = PanelState.STARTING
        self.detail = ""
        self.paused = spec.paused
        self.inbox_on = True
        self.halted_by = ""
        self.epoch = 0
        self.model = spec.model or ""
        self.checks = HostChecks(host.team.budget, team_spends, self._turn_sends)
        # Settings come from the instance's config with each life (life.py); until then the
        # guard refuses everything (there is no session to run a call anyway).
        self.seen: OrderedDict[int, Message] = OrderedDict()
        # The lane's `recipients` are checked by the guard; recipients.py says who a call
        # sends to.
        self.guard = Guard(
            NotStarted(),
            GuardSettings(),
            checks=[self.checks],
            recipients_of=recipients_of(self.seen),
        )
        self.guard.on_record.append(self._on_record)
        self.turns = 0
        # When its last turn ended (0: none yet), and its usual gap between turns' ends (None
        # until it has two): when its next turn is due, for its warm spare (spares.py).
        self.last_active = 0.0
        self.turn_gap: float | None = None
        self.dead_letters = 0  # on the bus for this panel's routes (counted as each life starts)
        # Poison isolation (poison.py): what failed alone since the last good turn, the ids
        # dead-lettered as poison, and the ids of the turn whose failure ended the last life
        # (the supervisor reads it, so the restart policy can forgive a poison's failures).
        self.failure_book = FailureBook()
        self.poisoned: set[int] = set()
        self.failed_turn_ids: frozenset[int] = frozenset()
        self.send_limits = SendLimiter(host.team.sends, clock=host.clock)  # [team.sends]
        # For the status line: the window's tokens (after each turn and window verb) and the
        # messages waiting on the bus (inboxes.py, at its own cadence).
        self.window_tokens = 0
        self.waiting = 0
        self.position = 0  # its place in the team file (the host sets it)
        self.sandbox = ""  # how its tools run (PanelRow.sandbox; each life sets it)
        self.turn: TurnContext | None = None
        self.outbox: Outbox | None = None  # the sends of the turn in flight (run_turn)
        self.recent_calls: deque[tuple[float, str]] = deque(maxlen=20)
        self.wakeup = Wakeup()
        self.session: Session | None = None
        self.stopping = False
        self.turn_scope: anyio.CancelScope | None = None
        # Held while a turn runs and while a verb changes the window: one at a time.
        self.exclusive = anyio.Lock()
        # Woken by what concerns its two routes (its peer inbox, its operator input) only.
        routes = [(host.bus, spec.name), (host.operator_bus, operator_route(spec.name))]
        host.watch.add(self.wakeup.set, routes)

    # -- state --------------------------------------------------------------------------------

    @property
    def halt(self) -> HaltRecord | None:
        """The panel's current halt: the guard's."""
        return self.guard.halted

    def signal(self, signal: str) -> None:
        self.state = next_state(self.state, signal)

    def set_state(self, state: PanelState, detail: str = "") -> None:
        if state is not self.state or detail != self.detail:
            self.host.log.emit(StateChanged(panel=self.name, state=state.value, detail=detail))
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
        # A spent budget or a team over its limit halts the panel here, before it claims.
        return self.guard.may_begin() is not None

    def remember(self, messages: list[Message]) -> None:
        for message in messages:
            self.seen[message.id] = message
        while len(self.seen) > _SEEN_CAPACITY:
            self.seen.popitem(last=False)

    def spent(self) -> Spend:
        return self.guard.budget.snapshot().session

    async def count_window(self) -> None:
        """Note the window's tokens (the store keeps the total: no walk of the rows)."""
        session = self.session
        if session is not None:
            _, self.window_tokens = await session.store.window_totals()

    def status_row(self) -> PanelRow:
        spent = self.spent()
        session = self.session
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
            dead_letters=self.dead_letters,
            window_tokens=self.window_tokens,
            token_cap=session.config.max_window_tokens if session is not None else 0,
            budget_usd=self.guard.budget.limits.max_session_usd or 0.0,
            waiting=self.waiting,
            position=self.position,
            label=session.config.display_name if session is not None else "",
            sandbox=self.sandbox,
        )

    def _turn_sends(self) -> tuple[bool, int]:
        turn = self.turn
        return (False, 0) if turn is None else (turn.terminal, turn.sends)

    def _on_record(self, record: HaltRecord) -> None:
        """Every record the guard makes: a shadow one is an event; a halt stops the panel."""
        if record.shadow:
            self.host.log.emit(ShadowHalt(panel=self.name, rule=record.rule,
                                          message=record.message, turn=record.turn))  # fmt: skip
            return
        # `halt_now` names who asked first; a halt the guard found itself is by its source.
        self.halted_by = self.halted_by or record.source
        halted = Halted(panel=self.name, by=self.halted_by, source=record.source,
                        rule=record.rule, message=record.message, turn=record.turn)  # fmt: skip
        self.host.log.emit(halted)
        self._quarantine(record)
        if not self.in_turn:
            self.set_state(self.resting_state(), self.halt_detail())
        self.wakeup.set()

    def _quarantine(self, record: HaltRecord) -> None:
        """What the halted turn wrote to the team's shared memory stays out of search."""
        shared, session = self.host.shared_memory, self.session
        if shared is None or shared.quarantine is None or session is None:
            return
        turn = session.in_flight_row or session.last_turn_row
        if turn is None:
            return
        # One JSON line appended: small enough to write on the event loop, and it must be
        # on disk before the next search of any panel.
        shared.quarantine.add(session.provenance_of(turn), f"{record.source}: {record.rule}")

    # -- what the verbs change -------------------------------------------------------------------

    def halt_now(self, record: HaltRecord, *, by: str) -> None:
        """Stop the panel: the turn in flight is cancelled, the inbox is left as it is."""
        if self.halt is None:
            self.halted_by = by
            self.guard.halt_now(record)
        if self.turn_scope is not None:
            self.turn_scope.cancel()
        self.set_state(self.resting_state(), self.halt_detail())
        self.wakeup.set()

    def note_turn_end(self, now: float) -> None:
        """A turn ended at `now`: the gap between turns is averaged (each new gap weighs half)."""
        if self.turns > 1:
            gap = max(0.0, now - self.last_active)
            self.turn_gap = gap if self.turn_gap is None else (self.turn_gap + gap) / 2
        self.last_active = now

    def next_turn_due(self) -> float | None:
        """When this panel is expected to turn again: its last turn's end plus its usual gap;
        None before it has turned twice."""
        return None if self.turn_gap is None else self.last_active + self.turn_gap

    def halt_detail(self) -> str:
        if self.halt is None:
            return ""
        if self.halted_by in ("sentinel", "budget", ""):
            return self.halt.notice()
        return f"halted by {self.halted_by}: {self.halt.message}"

    def pause(self, reason: str = "") -> None:
        self.paused = True
        if not self.in_turn:
            self.set_state(self.resting_state(), reason)
        self.wakeup.set()

    async def resume(self, *, by: str) -> HaltRecord | None:
        """Clear pause and halt; the budget stop and the sentinel start over from here.
        Returns the halt that was lifted: the guard's, or a team loop halt owed to the panel
        that its guard has not taken yet (decided on what the operator resumes it from)."""
        self.paused = False
        halted = self.halt
        lifted = halted or self.checks.owed()
        if lifted is not None:
            # What would halt the panel again on the old evidence (a loop halt owed to it,
            # the slope's history) goes before the guard's halt, with no await between: the
            # store's write below awaits, and a life woken meanwhile asks its guard whether a
            # turn may begin. Had the owed halt still been there, the guard would take it back
            # and the panel would stay halted after a resume that said it was not.
            self.checks.forget()
            self.halted_by = ""
            if halted is not None:
                if self.session is not None:
                    await self.session.resume()  # the guard, and the store's current halt
                else:
                    self.guard.resume()
            self.host.log.emit(Resumed(panel=self.name, by=by, rule=lifted.rule))
        if not self.in_turn and self.state is not PanelState.FAILED:
            self.set_state(PanelState.IDLE)
        self.wakeup.set()
        return lifted

    def set_inbox(self, on: bool) -> None:
        self.inbox_on = on
        self.host.log.emit(InboxSwitched(panel=self.name, on=on))
        self.wakeup.set()

    def set_model(self, model: str) -> None:
        self.model = model
        if self.session is not None:
            self.session.config = self.session.config.model_copy(update={"model": model})
        self.host.log.emit(ModelChanged(panel=self.name, model=model))
        self.wakeup.set()  # an idle life replaces a spare built for the old model

    def stop_turn(self) -> bool:
        """Stop the turn in flight, if any (its rows are kept, marked)."""
        if self.turn_scope is None:
            return False
        self.turn_scope.cancel()
        return True

    @asynccontextmanager
    async def between_turns(self) -> AsyncIterator[Session | None]:
        """Hold the panel between turns (no turn starts meanwhile): the live session, or None
        when the panel has none (starting, failed)."""
        async with self.exclusive:
            yield self.session
