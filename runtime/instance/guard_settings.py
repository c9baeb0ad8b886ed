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
    "mcp__mnemara__wiki_write",
    "mcp__mnemara__graph_add_node",
    "mcp__mnemara__graph_add_edge",
    "mcp__mnemara__upsert_slot",
)

# The panel's own bookkeeping: notes, slots, the todo list, window care. What they change is
# never progress, and they are invisible to the other calls' repeat and alternation windows.
DEFAULT_BOOKKEEPING_TOOLS = (
    "mcp__mnemara__write_memory",
    "mcp__mnemara__wiki_write",
    "mcp__mnemara__graph_add_node",
    "mcp__mnemara__graph_add_edge",
    "mcp__mnemara__memory_index",
    "mcp__mnemara__upsert_slot",
    "mcp__mnemara__log_choice",
    "mcp__mnemara__propose_role_amendment",
    "mcp__mnemara__pin_row",
    "mcp__mnemara__mark_segment",
    "mcp__mnemara__tune_window",
    "mcp__mnemara__list_window",
    "mcp__mnemara__inspect_context",
    "mcp__mnemara__evict_thinking_blocks",
    "mcp__mnemara__evict_tool_use_blocks",
    "mcp__mnemara__evict_write_pairs",
    "mcp__mnemara__evict_last",
    "mcp__mnemara__evict_ids",
    "mcp__mnemara__evict_since",
    "mcp__mnemara__evict_older_than",
    "TodoWrite",
)

# Files a panel or its tools keep for themselves: logs, notes, progress and todo files, pid
# files, stamps and heartbeats, editor and cache droppings. Their changes are not progress: a
# loop that appends to its log each round still loops. One list for the sentinel and the
# team's loop rules (panels/host/loops/rules.py); runtime/guard/bookkeeping.py matches it.
DEFAULT_BOOKKEEPING_FILES = (
    "*.log", "*.log.*", "**/logs/**", "**/log/**", "nohup.out",
    "NOTES.md", "NOTES.txt", "notes/**", "PROGRESS.md", "progress.md", "progress.txt",
    "TODO.md", "todo.md", ".claude/**", ".mnemara/**",
    "*.pid", "*.stamp", "*.timestamp", "*heartbeat*", "*timestamp*", "*.tmp", "*~", "*.swp",
    ".cache/**", "__pycache__/**",
)  # fmt: skip


class SentinelSettings(BaseModel):
    """Thresholds of the runtime sentinel (the rules are in runtime/guard/sentinel.py).

    The defaults are set so that no legitimate session of the labelled corpus
    (tests/sentinel/corpus) nor of the real sessions (bench/real_sessions.py) is halted, and
    every tight polling loop is stopped before its third call: an action repeated 3 times
    within 8 calls (notes aside) with the same result and nothing changed, a cycle of 2 to 6
    calls run twice, the same error 3 times, or 5 turns in a row that end in a state already
    seen and learn nothing; a poll that waits 30 s a round may go on for 1800 s of waiting.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    window: int = Field(default=8, ge=2, le=100)
    repeat_threshold: int = Field(default=3, ge=2, le=100)
    alternation_cycles: int = Field(default=2, ge=0, le=50)  # 2 = A/B/A/B; 0 turns it off
    max_cycle_length: int = Field(default=6, ge=2, le=20)  # the longest cycle looked for
    failure_threshold: int = Field(default=3, ge=0, le=100)  # 0 turns it off
    no_progress_turns: int = Field(default=5, ge=0, le=1_000)  # 0 turns it off
    # A poll that waits at least this long a round (in calls that wait: sleep, a blocking
    # task read) is patient: it may repeat the same outcome until it has waited wait_budget_s.
    patient_round_s: float = Field(default=30.0, ge=0, le=86_400)
    wait_budget_s: float = Field(default=1800.0, ge=0, le=604_800)
    shadow: bool = False
    # Without a measured world (no probe), a success of one of these counts as a change.
    mutating_tools: tuple[str, ...] = DEFAULT_MUTATING_TOOLS
    bookkeeping_tools: tuple[str, ...] = DEFAULT_BOOKKEEPING_TOOLS
    # Files whose changes are bookkeeping, never progress (globs, relative to the panel's
    # working directory; `**/` matches any folder, a bare name any file of that name).
    bookkeeping_files: tuple[str, ...] = DEFAULT_BOOKKEEPING_FILES

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
