"""The team-wide budget: tokens and dollars summed over every panel of the host. Pure."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from panels.team import TeamBudget
from runtime.guard.records import HaltRecord

if TYPE_CHECKING:
    from panels.host.panel import PanelRunner


def team_spend(runners: Sequence[PanelRunner]) -> tuple[int, float]:
    tokens = 0
    usd = 0.0
    for runner in runners:
        spent = runner.budget.snapshot().session
        tokens += spent.input_tokens + spent.output_tokens
        usd += spent.usd
    return tokens, usd


def team_over_budget(budget: TeamBudget, runners: Sequence[PanelRunner]) -> HaltRecord | None:
    """A halt record when the team reached its token or dollar budget, else None."""
    if budget.max_tokens is None and budget.max_usd is None:
        return None
    tokens, usd = team_spend(runners)
    for rule, spent, limit, what in (
        ("team_tokens", float(tokens), budget.max_tokens, "tokens"),
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
