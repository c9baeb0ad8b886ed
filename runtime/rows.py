"""The values a turn store holds: content blocks, rows, slots and markers.

A content block is a JSON object kept exactly as the model service shaped it
(`{"type": "text", "text": ...}`, `tool_use`, `tool_result`, `thinking`), so nothing is lost
between the SDK, the store and an export.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

Block = dict[str, Any]
Role = Literal["user", "assistant", "system"]
# in_flight: the input of a turn that has not committed yet; interrupted: the process stopped
# before that turn committed (kept, shown, and marked so the next turn knows).
RowStatus = Literal["in_flight", "complete", "interrupted"]


@dataclass(frozen=True)
class Row:
    """One stored row of the rolling window."""

    id: int
    ts: str
    role: Role
    blocks: tuple[Block, ...]
    tokens: int
    # True when `tokens` came from the usage the model service reported, False for an estimate.
    tokens_exact: bool = False
    pinned: bool = False
    label: str = ""
    status: RowStatus = "complete"
    consumed_ids: tuple[int, ...] = ()
    # A compression stub (an older Read turned into a diff or "unchanged" pointer).
    compressed: bool = False


@dataclass(frozen=True)
class Slot:
    """A labelled value updated in place; always sent to the model, after the transcript."""

    label: str
    role: str
    content: str
    position: int
    updated_at: str


@dataclass(frozen=True)
class Marker:
    """A named point in the window (`mark_segment`), used by `evict_since`."""

    name: str
    after_row_id: int
    ts: str


@dataclass(frozen=True)
class NewRow:
    """A row to append; the store assigns id and timestamp."""

    role: Role
    blocks: tuple[Block, ...]
    tokens: int
    tokens_exact: bool = False
    pinned: bool = False
    label: str = ""
    consumed_ids: tuple[int, ...] = field(default=())


def estimate_tokens(text: str) -> int:
    """A cheap token estimate for when the service has not told us: about 4 chars a token."""
    return max(1, (len(text) + 3) // 4)


def text_of(blocks: tuple[Block, ...] | list[Block]) -> str:
    """The plain text of a row's blocks (text blocks only), for display."""
    return "\n".join(str(b.get("text", "")) for b in blocks if b.get("type") == "text")
