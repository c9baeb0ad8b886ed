"""The values a turn store holds: content blocks, rows, slots, markers, and delivery state.

A content block is a JSON object kept exactly as the model service shaped it
(`{"type": "text", "text": ...}`, `tool_use`, `tool_result`, `thinking`), so nothing is lost
between the SDK, the store and an export.

Delivery state (`Consumed`, `OutboxDraft`, `OutboxEntry`) is what a turn took in and what it
asked to send. The runtime knows nothing of the bus: a `source` is an opaque name the owner
gives, and message ids are plain integers.
"""

from __future__ import annotations

import uuid
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


@dataclass(frozen=True)
class Consumed:
    """The message ids a turn consumed, and the source they came from.

    `source` names where the ids are unique (the host passes its bus file's identity); the
    runtime attaches no meaning to it. The empty source means "unknown" and matches any.
    """

    source: str
    ids: tuple[int, ...]


@dataclass(frozen=True)
class OutboxDraft:
    """A send a turn queued; written to the outbox when (and only if) the turn commits.

    `recipient` None means everyone; `key` is the idempotency key the publisher passes on.
    """

    recipient: str | None
    payload: dict[str, Any]
    topic: str | None
    key: str

    @classmethod
    def new(cls, recipient: str | None, payload: dict[str, Any], topic: str | None) -> OutboxDraft:
        """A draft with a fresh key, holding `payload` as given: the owner has checked it
        (a JSON object within its bus's caps) and hands over a copy it no longer touches.
        The host checks each send once, where it knows the caps (panels/host/delivery/outbox.py)."""
        return cls(recipient, payload, topic, uuid.uuid4().hex)


@dataclass(frozen=True)
class OutboxEntry:
    """A stored send: pending until `published_at` (with the bus `message_id`) or `failed`."""

    id: int
    key: str
    label: str  # f"{user_row_id}.{position}", the id the model was given
    user_row_id: int
    position: int  # 0-based order among the turn's sends
    recipient: str | None
    topic: str | None
    payload: dict[str, Any]
    created_at: str
    published_at: str | None
    message_id: int | None
    failed: str | None  # why the publisher gave up on it
    failed_at: str | None = None
    source: str = ""  # where the turn's input came from ('' unknown: any publisher takes it)


def send_label(user_row_id: int, position: int) -> str:
    """The human id of a turn's send, as the model is told it."""
    return f"{user_row_id}.{position}"


def estimate_tokens(text: str) -> int:
    """A cheap token estimate for when the service has not told us: about 4 chars a token."""
    return max(1, (len(text) + 3) // 4)


def text_of(blocks: tuple[Block, ...] | list[Block]) -> str:
    """The plain text of a row's blocks (text blocks only), for display."""
    return "\n".join(str(b.get("text", "")) for b in blocks if b.get("type") == "text")
