"""What the rehearsal model says when it is called: the `Reply` value and its parts.

A `Reply` is what one `POST /v1/messages` gets back: content items (text, thinking, tool
calls) and a stop reason, or an error, plus fault knobs that change how the bytes are
delivered (slow first token, slow stream, a cut connection, broken tool JSON). Scripts
(`script.py`) and Python hooks both produce `Reply` values; the server (`server.py`) and the
SSE encoder (`sse.py`) only read them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

StopReason = Literal["end_turn", "tool_use", "max_tokens", "stop_sequence", "pause_turn", "refusal"]

# The error answers the rehearsal model can give, each with the HTTP status and error type
# the service uses for it (see `sse.ERRORS`).
ErrorKind = Literal[
    "overloaded",
    "rate_limited",
    "api_error",
    "prompt_too_long",
    "authentication",
    "invalid_request",
]


@dataclass(frozen=True)
class TextItem:
    text: str


@dataclass(frozen=True)
class ThinkingItem:
    thinking: str
    # The SDK refuses a thinking block without a signature, so there is always one.
    signature: str = "rehearsal-signature"


@dataclass(frozen=True)
class ToolUseItem:
    name: str
    input: Mapping[str, Any] = field(default_factory=dict)
    # Left empty in scripts; the server fills in a deterministic `toolu_…` id.
    id: str = ""


ContentItem = TextItem | ThinkingItem | ToolUseItem


@dataclass(frozen=True)
class Faults:
    """How the answer is delivered, when a test wants it to go wrong."""

    # Seconds to wait after the response headers, before the first event.
    delay_first_token: float = 0.0
    # Seconds to wait between SSE events.
    delay_between_chunks: float = 0.0
    # Close the connection after this many bytes of the response body (mid-block).
    cut_after_bytes: int | None = None
    # Stream tool input that is not valid JSON.
    malformed_tool_json: bool = False
    # With `Reply.error`: send HTTP 200 and deliver the error as an SSE `error` event after
    # `message_start`, the way the service reports overload mid-stream.
    error_in_stream: bool = False


@dataclass(frozen=True)
class Reply:
    """One answer of the rehearsal model."""

    content: tuple[ContentItem, ...] = ()
    stop_reason: StopReason | None = None
    error: ErrorKind | None = None
    # Replaces the service's stock message for `error`.
    error_message: str = ""
    faults: Faults = Faults()

    @classmethod
    def text(cls, text: str, *, stop_reason: StopReason | None = None) -> Reply:
        return cls(content=(TextItem(text),), stop_reason=stop_reason)

    @classmethod
    def tool(cls, name: str, input: Mapping[str, Any], *, text: str = "") -> Reply:
        """A tool call, optionally preceded by a line of text."""
        items: tuple[ContentItem, ...] = (TextItem(text),) if text else ()
        return cls(content=(*items, ToolUseItem(name, dict(input))))

    @classmethod
    def failure(cls, error: ErrorKind, *, in_stream: bool = False) -> Reply:
        return cls(error=error, faults=Faults(error_in_stream=in_stream))

    @property
    def effective_stop_reason(self) -> StopReason:
        """The stop reason sent: the one given, else `tool_use` when a tool is called."""
        if self.stop_reason is not None:
            return self.stop_reason
        if any(isinstance(item, ToolUseItem) for item in self.content):
            return "tool_use"
        return "end_turn"

    def with_tool_ids(self, make_id: Callable[[], str]) -> Reply:
        """A copy whose tool calls all carry ids; `make_id()` gives the next fresh one."""
        items = tuple(
            replace(item, id=make_id()) if isinstance(item, ToolUseItem) and not item.id else item
            for item in self.content
        )
        return replace(self, content=items)
