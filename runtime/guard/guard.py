"""The session's approver: every tool call asks the budget, then the sentinel, then the policy.

`Guard` wraps the permission policy (any `Approver`) and is what the driver consults, from the
PreToolUse hook and `can_use_tool` on the live path alike. A budget that is spent or a sentinel
rule that fires refuses the call before the policy is asked (so an operator is never asked
about a call that would not run anyway) and sets `halt`: the refusal's message is the
`[BUDGET HALT]` / `[SENTINEL HALT]` notice, and the session, seeing `halt`, stops consuming
the driver and ends the turn (runtime/session.py). Once halting, every further call of the
turn is refused with the same notice.

The guard also feeds the trackers what the turn reports (usage, cost, tool results) and
measures the world state that the no-progress rule compares from turn to turn.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from runtime.driver import Approver, Cost, Decision, DriverEvent, ToolCallRequest, ToolResult, Usage
from runtime.guard.budget import BudgetTracker
from runtime.guard.records import HaltRecord
from runtime.guard.sentinel import Sentinel, WorldState
from runtime.guard.settings import BudgetSettings, LimitsConfig


def _utc_now() -> datetime:
    return datetime.now(UTC)


class Guard:
    """Budget -> sentinel -> policy, for one session. `sentinel=False` leaves the sentinel out
    (config `runtime_sentinel`); `on_shadow` receives what shadow mode would have halted."""

    def __init__(
        self,
        policy: Approver,
        limits: LimitsConfig,
        *,
        sentinel: bool,
        on_shadow: Callable[[HaltRecord], None] = lambda record: None,
        clock: Callable[[], datetime] = _utc_now,
    ) -> None:
        self.policy = policy
        self.budget = BudgetTracker(limits.budget, clock=clock)
        self.sentinel = Sentinel(limits.sentinel, clock=clock) if sentinel else None
        self.halt: HaltRecord | None = None
        self._on_shadow = on_shadow
        self._turn_open = False

    @property
    def wants_world(self) -> bool:
        """Whether end_turn needs a measured world (the no-progress rule is on)."""
        return self.sentinel is not None and self.sentinel.settings.no_progress_turns > 0

    def begin_turn(self, turn: int) -> HaltRecord | None:
        """Start a turn; a record means the budget forbids it (the panel halts, nothing runs)."""
        self.halt = None
        verdict = self.budget.begin_turn(turn)
        if verdict.stop:
            return verdict.record
        if self.sentinel is not None:
            self.sentinel.begin_turn(turn)
        self._turn_open = True
        return None

    async def decide(self, call: ToolCallRequest) -> Decision:
        if self.halt is not None:
            return Decision(allow=False, message=self.halt.notice())
        spent = self.budget.check_before_call()
        if spent.stop and spent.record is not None:
            return self._stop(spent.record)
        if self.sentinel is not None:
            verdict = self.sentinel.observe_call(call)
            if verdict.halt and verdict.record is not None:
                return self._stop(verdict.record)
            if verdict.record is not None:
                self._on_shadow(verdict.record)
        return await self.policy.decide(call)

    def _stop(self, record: HaltRecord) -> Decision:
        self.halt = record
        return Decision(allow=False, message=record.notice())

    def observe(self, event: DriverEvent) -> None:
        """What the turn reported: spending for the budget, tool outcomes for the sentinel."""
        if isinstance(event, Usage):
            self.budget.record(usage=event)
        elif isinstance(event, Cost):
            self.budget.record(cost=event)
        elif isinstance(event, ToolResult) and self.sentinel is not None:
            self.sentinel.observe_result(event.tool_use_id, is_error=event.is_error)

    def end_turn(self, world: WorldState | None = None) -> HaltRecord | None:
        """Close the turn (idempotent); returns the record that halts the panel now, if any.

        Judged at the end: the no-progress rule (with `world`), and the session budgets, so a
        panel that has spent its budget stops now rather than at its next input.
        """
        if not self._turn_open:
            return self.halt
        self._turn_open = False
        self.budget.end_turn()
        if self.sentinel is not None:
            verdict = self.sentinel.end_turn(world if self.halt is None else None)
            if verdict.halt and verdict.record is not None and self.halt is None:
                self.halt = verdict.record
            elif verdict.record is not None and not verdict.halt:
                self._on_shadow(verdict.record)
        if self.halt is None:
            spent = self.budget.check_before_call()
            if spent.stop:
                self.halt = spent.record
        return self.halt

    def resume(self, limits: BudgetSettings | None = None) -> None:
        """The operator lets the panel go on: clear the halt, the budget stop, the sentinel."""
        self.halt = None
        self.budget.resume(limits)
        if self.sentinel is not None:
            self.sentinel.reset()

    def spend(self) -> dict[str, Any]:
        """The session's spend so far and its limits, as `inspect_context` and `show` print it."""
        snap = self.budget.snapshot()
        s = snap.session
        limits = {k: v for k, v in snap.limits.model_dump().items() if v is not None}
        return {
            "turns": s.turns,
            "requests": s.requests,
            "input_tokens": s.input_tokens,
            "output_tokens": s.output_tokens,
            "usd": round(s.usd, 6),
            "limits": limits,
            "sentinel": "off" if self.sentinel is None else self._sentinel_mode(),
        }

    def _sentinel_mode(self) -> str:
        assert self.sentinel is not None
        return "shadow" if self.sentinel.settings.shadow else "on"
