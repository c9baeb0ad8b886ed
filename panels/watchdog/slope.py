"""The budget-slope trigger: spend per turn rising, turn after turn, with nothing to show. Pure.

A growing transcript makes every turn a little dearer, so slow growth is normal. A runaway
looks different: each turn makes more model requests than the one before (more tool calls,
more retries) and none of them changes anything or tells anyone anything. The trigger fires
when the last `turns` turns all made tool calls, none made progress (a successful mutating
call or a sent message), and each spent at least `growth` times the tokens of the one before.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class TurnSpend:
    tokens: int  # every prompt token (cached or not) plus output, summed over the turn
    usd: float
    tool_calls: int
    progress: bool


@dataclass(frozen=True)
class SlopeSettings:
    turns: int = 3
    growth: float = 1.5

    def __post_init__(self) -> None:
        if self.turns < 2 or self.growth <= 1.0:
            raise ValueError("need turns >= 2 and growth > 1")


def budget_slope(history: Sequence[TurnSpend], settings: SlopeSettings) -> str | None:
    """Why the slope trigger fires on `history` (oldest first), or None."""
    last = list(history[-settings.turns :])
    if len(last) < settings.turns:
        return None
    if any(t.progress or t.tool_calls == 0 for t in last):
        return None
    pairs = itertools.pairwise(last)
    if not all(b.tokens >= a.tokens * settings.growth and a.tokens > 0 for a, b in pairs):
        return None
    figures = " -> ".join(f"{t.tokens}" for t in last)
    return (
        f"spend per turn rose {settings.turns} turns in a row without progress "
        f"(tokens per turn {figures}; no file changed and no message sent)"
    )
