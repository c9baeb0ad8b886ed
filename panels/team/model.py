"""The team file's shape: pydantic models for the team, its bus, budgets and panels.

A boundary model (STYLE.md 6): the TOML is validated here once, then the host works with the
frozen `TeamSpec` that `load.py` builds from it. Unknown keys are errors, so a typo in a
budget name cannot silently leave a panel without its limit.
"""

from __future__ import annotations

import re
from typing import Self

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from runtime.config import ToolPolicy
from runtime.guard.settings import BudgetSettings, SentinelSettings

# A panel name is both a bus role and an instance name: the intersection of the two rules.
NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"
# Senders the host itself writes as; a panel cannot take their names.
RESERVED_NAMES = frozenset({"operator", "host"})
KNOWN_KINDS = ("worker", "watchdog", "producer")


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class TeamBudget(_Model):
    """Limits across all panels of the team; None means no limit."""

    max_tokens: int | None = Field(default=None, ge=1)
    max_usd: float | None = Field(default=None, gt=0)


class BatchSettings(_Model):
    """How a panel's pending messages are taken: one batch per turn, within these limits."""

    enabled: bool = True  # false: one message per turn (the original's peer_poll_batch)
    max_messages: int = Field(default=20, ge=1, le=500)
    max_tokens: int = Field(default=8_000, ge=100, le=200_000)


class PanelModel(_Model):
    """One `[[panels]]` table."""

    name: str = Field(pattern=NAME_PATTERN)
    instance: str | None = Field(default=None, pattern=NAME_PATTERN)
    role: str | None = None
    model: str | None = None
    kind: str = "worker"
    listens_to: list[str] | None = None
    paused: bool = False
    batch: BatchSettings = Field(default_factory=BatchSettings)
    budget: BudgetSettings = Field(default_factory=BudgetSettings)
    sentinel: SentinelSettings = Field(default_factory=SentinelSettings)
    policy: list[ToolPolicy] = Field(default_factory=list)

    @field_validator("name")
    @classmethod
    def _not_reserved(cls, value: str) -> str:
        if value in RESERVED_NAMES:
            raise ValueError(f"{value!r} is reserved for the host's own messages")
        return value

    @field_validator("listens_to")
    @classmethod
    def _senders(cls, value: list[str] | None) -> list[str] | None:
        for sender in value or ():
            if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._:@-]{0,63}", sender):
                raise ValueError(f"{sender!r} is not a sender name")
        return value


class TeamSection(_Model):
    """The `[team]` table."""

    name: str = Field(pattern=NAME_PATTERN)
    bus: str | None = None  # None: <home>/_teams/<name>/bus.sqlite; else a path (foreign ok)
    workdir: str | None = None  # panels' working directory; None: the team file's directory
    rehearsal: str | None = None  # a rehearsal script: run offline against the rehearsal model
    max_concurrent_turns: int = Field(default=2, ge=1, le=64)
    digest_interval_seconds: float = Field(default=30.0, gt=0)
    approval_timeout_seconds: float = Field(default=300.0, gt=0)
    # The digest calls a turn with this many tool calls a runaway (an alert for the watchdog).
    runaway_tool_calls: int = Field(default=8, ge=2)
    budget: TeamBudget = Field(default_factory=TeamBudget)


class TeamModel(_Model):
    """The whole file."""

    team: TeamSection
    panels: list[PanelModel] = Field(min_length=1)

    @model_validator(mode="after")
    def _unique(self) -> Self:
        seen: set[str] = set()
        instances: set[str] = set()
        for panel in self.panels:
            if panel.name in seen:
                raise ValueError(f"panel name {panel.name!r} is used twice")
            seen.add(panel.name)
            instance = panel.instance or panel.name
            if instance in instances:
                raise ValueError(f"instance {instance!r} is used by two panels")
            instances.add(instance)
        return self
