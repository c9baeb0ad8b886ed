"""From the SDK's parsed messages to our driver events, one turn at a time.

The CLI streams a reply twice: as `stream_event` deltas while the model writes (we ask for
them with `include_partial_messages`), and as whole assistant messages, one per finished
content block, all carrying the API message id. Text is taken from the deltas; an assistant
message's text is used only when no delta arrived for its message id (a CLI without partial
messages, or its synthetic error messages), so no text is yielded twice. Thinking and tool
calls are taken from the whole messages, where they are complete. Messages of a subagent
(`parent_tool_use_id` set) belong to the subagent's own transcript and are skipped.

Usage is reported per model request, as soon as the request's counts are final, so budgets
see it between the requests of a turn and a stopped turn keeps what its finished requests
spent. Every assistant message of a response carries the usage of its `message_start`, where
output_tokens is still 1; the final counts come in the `message_delta` stream event. So a
request is reported at its `message_delta`, or, when the CLI streams no events for it, at its
first assistant message (the output then short, made up at the result); ids already reported
are skipped. The result's total is authoritative: only what it adds beyond the requests
already reported becomes one more `Usage`. `Cost` is the turn's running total, estimated per
request from runtime/turn/pricing.py's rates and replaced by the SDK's `total_cost_usd` at the end.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from runtime.claude.failures import classify_failure
from runtime.turn.driver import (
    Cost,
    Done,
    DriverEvent,
    ErrorEvent,
    TextDelta,
    Thinking,
    ToolCall,
    ToolResult,
    Usage,
)
from runtime.turn.pricing import request_cost_usd
from runtime.turn.recorder import add_usage

if TYPE_CHECKING:
    from claude_agent_sdk import AssistantMessage, Message, ResultMessage, StreamEvent, UserMessage


def flatten_tool_content(content: str | list[dict[str, Any]] | None) -> str:
    """A tool result's content as plain text (text parts joined; other parts named)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    parts = []
    for item in content:
        if item.get("type") == "text":
            parts.append(str(item.get("text", "")))
        else:
            parts.append(f"[{item.get('type', 'content')}]")
    return "\n".join(parts)


TOKEN_FIELDS = (
    "input_tokens",
    "output_tokens",
    "cache_creation_input_tokens",
    "cache_read_input_tokens",
    "ephemeral_1h_input_tokens",  # from the nested `cache_creation`, for the 1h write rate
)


def token_counts(raw: dict[str, Any] | None) -> dict[str, int]:
    """The token counts of a usage dict, flattened; fields the CLI left out are absent."""
    if not raw:
        return {}
    nested = raw.get("cache_creation")
    merged = {**raw, **(nested if isinstance(nested, dict) else {})}
    return {k: v for k in TOKEN_FIELDS if isinstance(v := merged.get(k), int)}


def usage_from(raw: dict[str, Any] | None) -> Usage | None:
    """Our `Usage` from a usage dict (None when the CLI sent none)."""
    if not raw:
        return None

    def count(key: str) -> int:
        value = raw.get(key)
        return value if isinstance(value, int) else 0

    return Usage(
        input_tokens=count("input_tokens"),
        output_tokens=count("output_tokens"),
        cache_creation_input_tokens=count("cache_creation_input_tokens"),
        cache_read_input_tokens=count("cache_read_input_tokens"),
    )


def usage_remainder(total: Usage, reported: Usage) -> Usage | None:
    """What `total` adds beyond `reported`, field by field and never negative; None if nothing."""
    rest = Usage(
        max(total.input_tokens - reported.input_tokens, 0),
        max(total.output_tokens - reported.output_tokens, 0),
        max(total.cache_creation_input_tokens - reported.cache_creation_input_tokens, 0),
        max(total.cache_read_input_tokens - reported.cache_read_input_tokens, 0),
    )
    return rest if rest != Usage(0, 0) else None


def estimate_usd(model: str, counts: dict[str, int]) -> float:
    """One request's cost from its token counts, at `model`'s rates."""
    one_hour = counts.get("ephemeral_1h_input_tokens", 0)
    return request_cost_usd(
        model,
        input_tokens=counts.get("input_tokens", 0),
        output_tokens=counts.get("output_tokens", 0),
        cache_write_5m_tokens=max(counts.get("cache_creation_input_tokens", 0) - one_hour, 0),
        cache_write_1h_tokens=one_hour,
        cache_read_tokens=counts.get("cache_read_input_tokens", 0),
    )


@dataclass
class UsageMeter:
    """One turn's per-request usage: what each request's messages said, what was reported."""

    model: str = ""
    pending: dict[str, dict[str, int]] = field(default_factory=dict)  # id -> counts so far
    reported_ids: set[str] = field(default_factory=set)
    reported: Usage = field(default_factory=lambda: Usage(0, 0))
    estimated_usd: float = 0.0

    def note(self, message_id: str, raw: dict[str, Any] | None, model: str = "") -> None:
        """Counts seen for a request; later frames of one request only ever raise them."""
        if model:
            self.model = model
        counts = token_counts(raw)
        if not message_id or message_id in self.reported_ids or not counts:
            return
        seen = self.pending.setdefault(message_id, {})
        for key, value in counts.items():
            seen[key] = max(seen.get(key, 0), value)

    def report(self, message_id: str) -> list[DriverEvent]:
        """`Usage` and the running `Cost` for a finished request (nothing if already reported)."""
        counts = self.pending.pop(message_id, None)
        if counts is None:
            return []
        self.reported_ids.add(message_id)
        usage = usage_from(counts)
        assert usage is not None  # noted counts are never empty
        self.reported = add_usage(self.reported, usage)
        self.estimated_usd += estimate_usd(self.model, counts)
        return [usage, Cost(self.estimated_usd)]

    def report_all_but(self, message_id: str = "") -> list[DriverEvent]:
        """Report every pending request except `message_id`: they are over."""
        events: list[DriverEvent] = []
        for done in [i for i in self.pending if i != message_id]:
            events += self.report(done)
        return events

    def settle(
        self, total_raw: dict[str, Any] | None, total_usd: float | None
    ) -> list[DriverEvent]:
        """At the result: the remainder of the result's total, and the authoritative cost."""
        events = self.report_all_but()
        total = usage_from(total_raw)
        rest = usage_remainder(total, self.reported) if total is not None else None
        if rest is not None:
            self.reported = add_usage(self.reported, rest)
            self.estimated_usd += estimate_usd(self.model, asdict(rest))
            events.append(rest)
        if total_usd is not None:
            self.estimated_usd = float(total_usd)
            events.append(Cost(self.estimated_usd))
        elif rest is not None:
            events.append(Cost(self.estimated_usd))
        return events


@dataclass
class TurnMapper:
    """Maps one turn's messages to events; `finished` is set by the result message."""

    streamed_ids: set[str] = field(default_factory=set)
    stream_id: str = ""
    seen_tool_calls: set[str] = field(default_factory=set)
    assistant_error: str | None = None
    assistant_error_text: str = ""
    finished: bool = False
    meter: UsageMeter = field(default_factory=UsageMeter)

    def map(self, message: Message) -> list[DriverEvent]:
        from claude_agent_sdk import AssistantMessage, ResultMessage, StreamEvent, UserMessage

        if isinstance(message, StreamEvent):
            return self._stream(message)
        if isinstance(message, AssistantMessage):
            return self._assistant(message)
        if isinstance(message, UserMessage):
            return self._user(message)
        if isinstance(message, ResultMessage):
            return self._result(message)
        return []

    def _stream(self, message: StreamEvent) -> list[DriverEvent]:
        if message.parent_tool_use_id is not None:
            return []
        event = message.event
        if event.get("type") == "message_start":
            started = event.get("message") or {}
            self.stream_id = str(started.get("id") or "")
            self.streamed_ids.discard("")  # an id-less message only covers itself
            # A new request means the earlier ones are over, even if a delta went missing.
            events = self.meter.report_all_but(self.stream_id)
            self.meter.note(self.stream_id, started.get("usage"), str(started.get("model") or ""))
            return events
        if event.get("type") == "message_delta":
            self.meter.note(self.stream_id, event.get("usage"))
            return self.meter.report(self.stream_id)
        delta = event.get("delta") or {}
        if event.get("type") == "content_block_delta" and delta.get("type") == "text_delta":
            text = str(delta.get("text", ""))
            if text:
                self.streamed_ids.add(self.stream_id)
                return [TextDelta(text)]
        return []

    def _assistant(self, message: AssistantMessage) -> list[DriverEvent]:
        from claude_agent_sdk import TextBlock, ThinkingBlock, ToolUseBlock

        if message.parent_tool_use_id is not None:
            return []
        if message.error is not None:
            # A failed API call: its text is the CLI's error prose, not model output. The result
            # that follows decides the error kind, with this code as evidence.
            self.assistant_error = message.error
            self.assistant_error_text = " ".join(
                b.text for b in message.content if isinstance(b, TextBlock)
            )
            return []
        message_id = message.message_id or ""
        streamed = message_id in self.streamed_ids
        self.meter.note(message_id, message.usage, message.model)
        # A request the CLI streams is reported at its message_delta; one it does not, now.
        events = self.meter.report(message_id) if message_id != self.stream_id else []
        for block in message.content:
            if isinstance(block, TextBlock) and not streamed and block.text:
                events.append(TextDelta(block.text))
            elif isinstance(block, ThinkingBlock):
                events.append(Thinking(block.thinking, block.signature))
            elif isinstance(block, ToolUseBlock) and block.id not in self.seen_tool_calls:
                self.seen_tool_calls.add(block.id)
                events.append(ToolCall(block.id, block.name, dict(block.input)))
        return events

    def _user(self, message: UserMessage) -> list[DriverEvent]:
        from claude_agent_sdk import ToolResultBlock

        if message.parent_tool_use_id is not None or isinstance(message.content, str):
            return []
        return [
            ToolResult(b.tool_use_id, flatten_tool_content(b.content), bool(b.is_error))
            for b in message.content
            if isinstance(b, ToolResultBlock)
        ]

    def _result(self, message: ResultMessage) -> list[DriverEvent]:
        self.finished = True
        events = self.meter.settle(message.usage, message.total_cost_usd)
        if message.is_error or message.subtype != "success":
            events.append(self._failure(message))
        else:
            events.append(Done(message.stop_reason or "end_turn"))
        return events

    def _failure(self, message: ResultMessage) -> ErrorEvent:
        said = "; ".join(str(e) for e in message.errors or [])
        said = said or message.result or self.assistant_error_text
        if not said and message.subtype != "success":
            said = f"the turn ended with {message.subtype}"
        return classify_failure(
            said, status=message.api_error_status, assistant_error=self.assistant_error
        )
