"""Halt records: why a panel was (or in shadow mode, would have been) stopped, with the evidence.

Made by the budget, the sentinel, the lane (a role doc's front matter that cannot be read)
and the owner's own checks (a host's team-level loop rules are `team`); written by halts.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, Literal

HaltSource = Literal["sentinel", "budget", "lane", "team"]
_TAGS: dict[str, str] = {
    "sentinel": "[SENTINEL HALT]",
    "budget": "[BUDGET HALT]",
    "lane": "[LANE HALT]",
    "team": "[TEAM HALT]",
}


def halt_tag(source: str) -> str:
    """The tag a halt notice starts with; an unknown source reads as the sentinel's."""
    return _TAGS.get(source, _TAGS["sentinel"])


@dataclass(frozen=True)
class CallEvidence:
    tool_use_id: str
    name: str
    arguments: str
    row_id: int | None = None
    failed: bool | None = None


@dataclass(frozen=True)
class HaltRecord:
    """Why a panel was (or in shadow mode, would have been) stopped, with the evidence."""

    source: HaltSource
    rule: str
    message: str
    turn: int
    at: datetime
    shadow: bool = False
    calls: tuple[CallEvidence, ...] = ()
    figures: tuple[tuple[str, float], ...] = ()

    def notice(self) -> str:
        """The line that ends the turn in the transcript."""
        return f"{halt_tag(self.source)} {self.rule}: {self.message}"

    def with_row_ids(self, row_ids: Mapping[str, int]) -> HaltRecord:
        """The same record with stored row ids filled in for the calls (by tool_use_id)."""
        calls = tuple(replace(c, row_id=row_ids.get(c.tool_use_id, c.row_id)) for c in self.calls)
        return replace(self, calls=calls)

    def as_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "rule": self.rule,
            "message": self.message,
            "turn": self.turn,
            "at": self.at.isoformat(),
            "shadow": self.shadow,
            "calls": [c.__dict__ for c in self.calls],
            "figures": dict(self.figures),
        }
