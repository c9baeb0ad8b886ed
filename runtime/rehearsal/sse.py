"""The Messages API wire shapes of a `Reply`: SSE events, the non-streaming body, errors.

A streamed answer is, in order: `message_start` (the message with empty content and the
input usage), one `ping`, then per content block `content_block_start`, one or more
`content_block_delta` (`text_delta`, `thinking_delta` then `signature_delta`, or
`input_json_delta` carrying `partial_json`), `content_block_stop`; then `message_delta`
(stop reason and the full usage) and `message_stop`. An error inside a stream is an `error`
event after `message_start`, and the stream ends there. Each event goes out as
`event: <type>` and `data: <json>` lines followed by a blank line.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from runtime.rehearsal.replies import (
    ContentItem,
    ErrorKind,
    Reply,
    TextItem,
    ThinkingItem,
    ToolUseItem,
)

# HTTP status, error type and stock message of each error the rehearsal model can give.
ERRORS: Mapping[ErrorKind, tuple[int, str, str]] = {
    "overloaded": (529, "overloaded_error", "Overloaded"),
    "rate_limited": (429, "rate_limit_error", "Rate limit reached (rehearsal)"),
    "api_error": (500, "api_error", "Internal server error (rehearsal)"),
    "prompt_too_long": (
        400,
        "invalid_request_error",
        "prompt is too long: 1000001 tokens > 1000000 maximum",
    ),
    "authentication": (401, "authentication_error", "invalid x-api-key"),
    "invalid_request": (400, "invalid_request_error", "invalid request (rehearsal)"),
}

Event = dict[str, Any]


def error_body(kind: ErrorKind, message: str = "") -> tuple[int, Event]:
    status, error_type, stock = ERRORS[kind]
    return status, {"type": "error", "error": {"type": error_type, "message": message or stock}}


def encode_event(event: Mapping[str, Any]) -> bytes:
    data = json.dumps(event, ensure_ascii=False, separators=(",", ":"))
    return f"event: {event['type']}\ndata: {data}\n\n".encode()


def parse_sse(stream: bytes) -> list[Event]:
    """The data objects of an SSE byte stream, in order (for tests and tools)."""
    events: list[Event] = []
    for frame in stream.decode().split("\n\n"):
        data = [line[5:].strip() for line in frame.split("\n") if line.startswith("data:")]
        if data:
            events.append(json.loads("\n".join(data)))
    return events


def split(text: str, size: int) -> list[str]:
    """`text` in pieces of at most `size` characters (at least one piece)."""
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def tool_input_json(item: ToolUseItem, *, malformed: bool = False) -> str:
    text = json.dumps(dict(item.input), ensure_ascii=False, separators=(",", ":"))
    # A doubled comma before the closing brace: no JSON parser, strict or lenient, takes it.
    return text[:-1] + ",,}" if malformed else text


def _block_start(item: ContentItem) -> Event:
    if isinstance(item, TextItem):
        return {"type": "text", "text": ""}
    if isinstance(item, ThinkingItem):
        return {"type": "thinking", "thinking": "", "signature": ""}
    return {"type": "tool_use", "id": item.id, "name": item.name, "input": {}}


def _deltas(item: ContentItem, chunk: int, malformed: bool) -> list[Event]:
    if isinstance(item, TextItem):
        return [{"type": "text_delta", "text": t} for t in split(item.text, chunk)]
    if isinstance(item, ThinkingItem):
        pieces = [{"type": "thinking_delta", "thinking": t} for t in split(item.thinking, chunk)]
        return [*pieces, {"type": "signature_delta", "signature": item.signature}]
    raw = tool_input_json(item, malformed=malformed)
    return [{"type": "input_json_delta", "partial_json": t} for t in split(raw, chunk)]


def message_events(
    reply: Reply,
    *,
    message_id: str,
    model: str,
    usage: Mapping[str, Any],
    output_tokens: int,
    chunk_chars: int = 64,
) -> list[Event]:
    """The SSE events of a streamed answer (tool ids must already be filled in)."""
    start: Event = {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {**usage, "output_tokens": 1},
    }
    events: list[Event] = [{"type": "message_start", "message": start}, {"type": "ping"}]
    if reply.error is not None:
        return [*events, error_body(reply.error, reply.error_message)[1]]
    for index, item in enumerate(reply.content):
        events.append(
            {"type": "content_block_start", "index": index, "content_block": _block_start(item)}
        )
        for delta in _deltas(item, chunk_chars, reply.faults.malformed_tool_json):
            events.append({"type": "content_block_delta", "index": index, "delta": delta})
        events.append({"type": "content_block_stop", "index": index})
    events.append(
        {
            "type": "message_delta",
            "delta": {"stop_reason": reply.effective_stop_reason, "stop_sequence": None},
            # The service repeats the input figures here; clients keep the last ones seen.
            "usage": {**usage, "output_tokens": output_tokens},
        }
    )
    events.append({"type": "message_stop"})
    return events


def message_body(
    reply: Reply, *, message_id: str, model: str, usage: Mapping[str, Any], output_tokens: int
) -> Event:
    """The JSON body of a non-streaming answer."""
    content: list[Event] = []
    for item in reply.content:
        if isinstance(item, TextItem):
            content.append({"type": "text", "text": item.text})
        elif isinstance(item, ThinkingItem):
            content.append(
                {"type": "thinking", "thinking": item.thinking, "signature": item.signature}
            )
        else:
            content.append(
                {"type": "tool_use", "id": item.id, "name": item.name, "input": dict(item.input)}
            )
    return {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": reply.effective_stop_reason,
        "stop_sequence": None,
        "usage": {**usage, "output_tokens": output_tokens},
    }
