"""Hard budgets for one panel: turns, tokens and dollars, per session and per turn.

The owner feeds the tracker what the model service really reported and asks before every
turn and every tool call whether the panel may go on:

    may_begin()          whether a turn may start (the session's turn count and totals)
    begin_turn()         before a turn starts (the same checks, then the turn is open)
    check_before_call()  before each tool call (checks session and turn totals)
    record(usage, cost)  for each Usage event (one model request, added up) and each Cost
                         event (the turn's running total as the SDK reports it, never summed)
    end_turn()           when the turn's rows are stored

Input tokens count every prompt token (`Usage.prompt_tokens`: uncached, cache writes and
cache reads), since that is what fills the context. A limit is reached at `>=`; usage only
arrives after a request, so one request can overshoot a limit, and the SDK's own per-turn
caps (`sdk_max_turns`, `sdk_max_budget_usd`) bound that. Once a limit is reached the panel
stays stopped, with the same halt record, until the operator calls `resume()`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime

from runtime.guard.records import HaltRecord
from runtime.instance.guard_settings import BudgetSettings
from runtime.turn.driver import Cost, Usage


@dataclass(frozen=True)
class Spend:
    turns: int = 0
    requests: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    usd: float = 0.0

    def __add__(self, other: Spend) -> Spend:
        return Spend(
            self.turns + other.turns,
            self.requests + other.requests,
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.usd + other.usd,
        )


@dataclass(frozen=True)
class BudgetSnapshot:
    session: Spend
    turn: Spend
    limits: BudgetSettings
    stopped: HaltRecord | None


@dataclass(frozen=True)
class BudgetVerdict:
    stop: bool = False
    record: HaltRecord | None = None

    @property
    def message(self) -> str:
        return self.record.notice() if self.record else ""


GO = BudgetVerdict()


def _utc_now() -> datetime:
    return datetime.now(UTC)


class BudgetTracker:
    """Adds up one panel's spending and says when a limit is reached. No I/O."""

    def __init__(self, limits: BudgetSettings, *, clock: Callable[[], datetime] = _utc_now) -> None:
        self.limits = limits
        self._clock = clock
        self._closed = Spend()
        self._turn = Spend()
        self._turn_number = 0
        self._stopped: HaltRecord | None = None

    def may_begin(self) -> BudgetVerdict:
        """Whether a turn may start now (the session's limits), without starting one."""
        verdict = self._check(include_turn_limits=False)
        if verdict.stop:
            return verdict
        limit = self.limits.max_session_turns
        if limit is not None and self._closed.turns >= limit:
            return self._stop("session_turns", self._closed.turns, limit, "turns this session")
        return GO

    def begin_turn(self, turn: int | None = None) -> BudgetVerdict:
        verdict = self.may_begin()
        if verdict.stop:
            return verdict
        if self._turn.turns:
            self.end_turn()  # the previous turn was never closed; keep what it spent
        self._turn_number = turn if turn is not None else self._turn_number + 1
        self._turn = Spend(turns=1)
        return GO

    def check_before_call(self) -> BudgetVerdict:
        return self._check(include_turn_limits=True)

    def record(self, usage: Usage | None = None, cost: Cost | None = None) -> None:
        if usage is not None:
            self._turn = self._turn + Spend(
                requests=1, input_tokens=usage.prompt_tokens, output_tokens=usage.output_tokens
            )
        if cost is not None:
            self._turn = replace(self._turn, usd=max(self._turn.usd, cost.usd))

    def end_turn(self) -> None:
        self._closed = self._closed + self._turn
        self._turn = Spend()

    def resume(self, limits: BudgetSettings | None = None) -> None:
        """The operator let the panel go on, perhaps with new limits."""
        if limits is not None:
            self.limits = limits
        self._stopped = None

    def snapshot(self) -> BudgetSnapshot:
        return BudgetSnapshot(self._closed + self._turn, self._turn, self.limits, self._stopped)

    def sdk_max_turns(self) -> int | None:
        """The per-turn request cap to hand to the SDK as `max_turns`."""
        return self.limits.max_turn_requests

    def sdk_max_budget_usd(self) -> float | None:
        """The per-turn dollar cap for the SDK: the turn limit, or what the session has left."""
        caps = [self.limits.max_turn_usd]
        if self.limits.max_session_usd is not None:
            caps.append(max(self.limits.max_session_usd - self._closed.usd, 0.0))
        present = [c for c in caps if c is not None]
        return min(present) if present else None

    def _check(self, *, include_turn_limits: bool) -> BudgetVerdict:
        if self._stopped is not None:
            return BudgetVerdict(stop=True, record=self._stopped)
        session = self._closed + self._turn
        lim = self.limits
        checks: list[tuple[str, float, float | None, str]] = [
            ("session_input_tokens", session.input_tokens, lim.max_session_input_tokens,
             "input tokens this session"),
            ("session_output_tokens", session.output_tokens, lim.max_session_output_tokens,
             "output tokens this session"),
            ("session_usd", session.usd, lim.max_session_usd, "US dollars this session"),
        ]  # fmt: skip
        if include_turn_limits:
            turn = self._turn
            checks += [
                ("turn_requests", turn.requests, lim.max_turn_requests, "model requests this turn"),
                ("turn_input_tokens", turn.input_tokens, lim.max_turn_input_tokens,
                 "input tokens this turn"),
                ("turn_output_tokens", turn.output_tokens, lim.max_turn_output_tokens,
                 "output tokens this turn"),
                ("turn_usd", turn.usd, lim.max_turn_usd, "US dollars this turn"),
            ]  # fmt: skip
        for rule, spent, limit, what in checks:
            if limit is not None and spent >= limit:
                return self._stop(rule, spent, limit, what)
        return GO

    def _stop(self, rule: str, spent: float, limit: float, what: str) -> BudgetVerdict:
        shown = f"{spent:.4f}" if isinstance(spent, float) else str(spent)
        message = (
            f"the panel reached its budget of {limit:g} {what} (spent {shown}); it stops "
            "here. Raise the limit or resume the panel to go on."
        )
        self._stopped = HaltRecord(
            source="budget",
            rule=rule,
            message=message,
            turn=self._turn_number,
            at=self._clock(),
            figures=(("spent", float(spent)), ("limit", float(limit))),
        )
        return BudgetVerdict(stop=True, record=self._stopped)
