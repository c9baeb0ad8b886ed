"""The host's own checks in a panel's guard: terminal sends, the team budget, the budget slope.

A `HostChecks` is one panel's `GuardCheck` (runtime/guard/guard.py); the guard asks it after
the panel's own budget and before the sentinel and the policy:

- before a turn and before every call: the team-wide budget (tokens and dollars summed over
  every panel of the host) halts the panel once reached;
- before every call: after a terminal send (`send_message(..., terminal=true)`) the turn is
  over, so every further call is refused (not a halt: the panel just yields);
- after a turn: the budget-slope trigger (panels/watchdog/slope.py) halts a panel whose
  spend per turn keeps rising with nothing to show;
- team loops (loops/watch.py, once the host wires the panel in with `watch_loops`): after a
  turn, the turn is fed to the team's message graph; before a turn and before every call, a
  loop halt another panel's turn or send owes this panel stops it (so the other side of a
  ping-pong halts before its next turn, not when it ends one).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from datetime import UTC, datetime

from panels.host.loops.watch import LoopWatch, TurnView
from panels.team import TeamBudget
from panels.watchdog.slope import SlopeSettings, TurnSpend, budget_slope
from runtime.guard.budget import Spend
from runtime.guard.guard import Refusal, TurnTally
from runtime.guard.records import HaltRecord
from runtime.turn.driver import ToolCallRequest

TERMINAL_REFUSAL = (
    "You already made your terminal send: this turn is over. End it now, without further "
    "tool calls; replies come in a later turn."
)


def team_over_budget(budget: TeamBudget, spends: Sequence[Spend]) -> HaltRecord | None:
    """A halt record when the team reached its token or dollar budget, else None. Pure."""
    if budget.max_tokens is None and budget.max_usd is None:
        return None
    tokens = float(sum(s.input_tokens + s.output_tokens for s in spends))
    usd = sum(s.usd for s in spends)
    for rule, spent, limit, what in (
        ("team_tokens", tokens, budget.max_tokens, "tokens"),
        ("team_usd", usd, budget.max_usd, "US dollars"),
    ):
        if limit is not None and spent >= limit:
            return HaltRecord(
                source="budget",
                rule=rule,
                message=(
                    f"the team reached its budget of {limit:g} {what} across all panels "
                    f"(spent {spent:g}); raise it in the team file or resume the panels"
                ),
                turn=0,
                at=datetime.now(UTC),
                figures=(("spent", spent), ("limit", float(limit))),
            )
    return None


class HostChecks:
    """One panel's host checks. `team_spends` gives every panel's session spend now;
    `sent` tells whether the turn in flight made a terminal send, or sent anything."""

    def __init__(
        self,
        budget: TeamBudget,
        team_spends: Callable[[], Sequence[Spend]],
        turn_sends: Callable[[], tuple[bool, int]],
        *,
        slope: SlopeSettings | None = None,
    ) -> None:
        self.budget = budget
        self.team_spends = team_spends
        self.turn_sends = turn_sends
        self.slope = slope or SlopeSettings()
        self.history: deque[TurnSpend] = deque(maxlen=50)
        self.loops: LoopWatch | None = None
        self.panel = ""
        self.turn_view: Callable[[], TurnView] = lambda: (None, ())

    def watch_loops(self, loops: LoopWatch, panel: str, turn_view: Callable[[], TurnView]) -> None:
        """Take part in the team's loop detection as `panel`; `turn_view` tells the turn in
        flight (its key and the messages it was given)."""
        self.loops, self.panel, self.turn_view = loops, panel, turn_view

    def before_turn(self) -> HaltRecord | None:
        return team_over_budget(self.budget, self.team_spends()) or self.owed()

    def before_call(self, call: ToolCallRequest) -> Refusal | None:
        team = team_over_budget(self.budget, self.team_spends()) or self.owed()
        if team is not None:
            return Refusal(team.notice(), team)
        terminal, _ = self.turn_sends()
        return Refusal(TERMINAL_REFUSAL) if terminal else None

    def owed(self) -> HaltRecord | None:
        """A team loop halt owed to this panel that its guard has not taken yet, if any."""
        return self.loops.owed_to(self.panel) if self.loops is not None else None

    def after_turn(self, tally: TurnTally) -> HaltRecord | None:
        loop = None
        if self.loops is not None:
            view = self.turn_view()
            loop = self.loops.turn_ended(self.panel, tally.turn, view, tally.changed_world)
        return self._slope(tally) or loop

    def _slope(self, tally: TurnTally) -> HaltRecord | None:
        _, sends = self.turn_sends()
        progress = bool(tally.changed_world) or sends > 0
        spent = tally.spent
        self.history.append(
            TurnSpend(
                spent.input_tokens + spent.output_tokens, spent.usd, tally.tool_calls, progress
            )
        )
        why = budget_slope(list(self.history), self.slope)
        if why is None:
            return None
        last = list(self.history)[-self.slope.turns :]
        return HaltRecord(
            source="budget",
            rule="budget_slope",
            message=why,
            turn=tally.turn,
            at=datetime.now(UTC),
            figures=tuple((f"turn_{i}", float(t.tokens)) for i, t in enumerate(last)),
        )

    def forget(self) -> None:
        """The operator resumed the panel: the slope starts over, loops are forgiven."""
        self.history.clear()
        if self.loops is not None:
            self.loops.forgive(self.panel)
