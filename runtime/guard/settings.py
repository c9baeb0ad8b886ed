"""Settings for the runtime sentinel and the hard budgets, as they appear in config and team files.

Two pydantic models, nested into the instance config under `limits` (and settable per panel in
a team file). The sentinel itself is switched on by the config's `runtime_sentinel` flag; these
are its thresholds. Every budget is off (None) unless set.
"""

from __future__ import annotations

from typing import Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

# Tools whose success changes the world, so repeating an identical call after one of them is
# progress, not a loop (a `git status` after each edit).
DEFAULT_MUTATING_TOOLS = (
    "Write",
    "Edit",
    "MultiEdit",
    "NotebookEdit",
    "mcp__mnemara__write_memory",
    "mcp__mnemara__upsert_slot",
)


class SentinelSettings(BaseModel):
    """Thresholds of the runtime sentinel (see runtime/guard/sentinel.py)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    window: int = Field(default=5, ge=2, le=100)
    repeat_threshold: int = Field(default=3, ge=2, le=100)
    alternation_cycles: int = Field(default=2, ge=0, le=50)  # 2 = A/B/A/B; 0 turns it off
    failure_threshold: int = Field(default=3, ge=0, le=100)  # 0 turns it off
    no_progress_turns: int = Field(default=5, ge=0, le=1_000)  # 0 turns it off
    shadow: bool = False
    mutating_tools: tuple[str, ...] = DEFAULT_MUTATING_TOOLS

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        if self.repeat_threshold > self.window:
            raise ValueError(
                f"repeat_threshold ({self.repeat_threshold}) cannot exceed window ({self.window})"
            )
        # One cycle (A/B) or one failure would stop almost every turn: 0 (off) or at least 2.
        if self.alternation_cycles == 1:
            raise ValueError("alternation_cycles must be 0 (off) or at least 2")
        if self.failure_threshold == 1:
            raise ValueError("failure_threshold must be 0 (off) or at least 2")
        return self


class BudgetSettings(BaseModel):
    """Hard limits for one panel; None means no limit. Checked before every call."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_session_turns: int | None = Field(default=None, ge=1)
    max_session_input_tokens: int | None = Field(default=None, ge=1)
    max_session_output_tokens: int | None = Field(default=None, ge=1)
    max_session_usd: float | None = Field(default=None, gt=0)
    # Per turn. max_turn_requests and max_turn_usd are also handed to the SDK (max_turns,
    # max_budget_usd) so the CLI stops on its own inside a turn.
    max_turn_requests: int | None = Field(default=None, ge=1)
    max_turn_input_tokens: int | None = Field(default=None, ge=1)
    max_turn_output_tokens: int | None = Field(default=None, ge=1)
    max_turn_usd: float | None = Field(default=None, gt=0)


class LimitsConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    sentinel: SentinelSettings = Field(default_factory=SentinelSettings)
    budget: BudgetSettings = Field(default_factory=BudgetSettings)
