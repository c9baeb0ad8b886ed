"""From the SDK's parsed messages to our driver events, one turn at a time.

The CLI streams a reply twice: as `stream_event` deltas while the model writes (we ask for
them with `include_partial_messages`), and as whole assistant messages, one per finished
content block, all carrying the API message id. Text is taken from the deltas; an assistant
message's text is used only when no delta arrived for its message id (a CLI without partial
messages, or its synthetic error messages), so no text is yielded twice. Thinking and tool
calls are taken from the whole messages, where they are complete. Messages of a subagent
(`parent_tool_use_id` set) belong to the subagent's own transcript and are skipped.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from runtime.claude.failures import classify_failure
from runtime.driver import (
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


def usage_from(raw: dict[str, Any] | None) -> Usage | None:
    """Our `Usage` from a result's usage dict (None when the CLI sent none)."""
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


@dataclass
class TurnMapper:
    """Maps one turn's messages to events; `finished` is set by the result message."""

    streamed_ids: set[str] = field(default_factory=set)
    stream_id: str = ""
    seen_tool_calls: set[str] = field(default_factory=set)
    assistant_error: str | None = None
    assistant_error_text: str = ""
    finished: bool = False

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
            self.stream_id = str((event.get("message") or {}).get("id") or "")
            self.streamed_ids.discard("")  # an id-less message only covers itself
            return []
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
        streamed = (message.message_id or "") in self.streamed_ids
        events: list[DriverEvent] = []
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
        events: list[DriverEvent] = []
        usage = usage_from(message.usage)
        if usage is not None:
            events.append(usage)
        if message.total_cost_usd is not None:
            events.append(Cost(float(message.total_cost_usd)))
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
