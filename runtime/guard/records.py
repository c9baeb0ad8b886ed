"""Halt records: why a panel was (or in shadow mode, would have been) stopped, with the evidence.

Made by the budget, the sentinel and the owner's own checks; written by halts.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, Literal


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

    source: Literal["sentinel", "budget"]
    rule: str
    message: str
    turn: int
    at: datetime
    shadow: bool = False
    calls: tuple[CallEvidence, ...] = ()
    figures: tuple[tuple[str, float], ...] = ()

    def notice(self) -> str:
        """The line that ends the turn in the transcript."""
        tag = "[SENTINEL HALT]" if self.source == "sentinel" else "[BUDGET HALT]"
        return f"{tag} {self.rule}: {self.message}"

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
