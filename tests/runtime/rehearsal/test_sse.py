"""SSE framing and the Messages API shapes of a reply: pure, no server."""

from __future__ import annotations

import json
from typing import Any

import pytest

from runtime.rehearsal import Faults, Reply, TextItem, ThinkingItem, ToolUseItem
from runtime.rehearsal.sse import (
    encode_event,
    error_body,
    message_body,
    message_events,
    parse_sse,
    split,
    tool_input_json,
)

USAGE = {"input_tokens": 10, "cache_creation_input_tokens": 20, "cache_read_input_tokens": 30}


def events_of(reply: Reply, chunk_chars: int = 4) -> list[dict[str, Any]]:
    return message_events(
        reply, message_id="msg_1", model="m", usage=USAGE, output_tokens=7, chunk_chars=chunk_chars
    )


def test_event_frames_are_named_data_lines_ending_in_a_blank_line() -> None:
    frame = encode_event({"type": "ping"})
    assert frame == b'event: ping\ndata: {"type":"ping"}\n\n'
    assert parse_sse(frame + encode_event({"type": "message_stop"})) == [
        {"type": "ping"},
        {"type": "message_stop"},
    ]


def test_text_and_thinking_and_tool_events_come_in_the_documented_order() -> None:
    reply = Reply(
        (
            ThinkingItem("think hard", "sig"),
            TextItem("hello world"),
            ToolUseItem("Bash", {"command": "ls -la"}, "toolu_1"),
        )
    )
    events = events_of(reply)
    kinds = [e["type"] for e in events]
    assert kinds[:2] == ["message_start", "ping"]
    assert kinds[-2:] == ["message_delta", "message_stop"]
    starts = [e for e in events if e["type"] == "content_block_start"]
    assert [s["content_block"]["type"] for s in starts] == ["thinking", "text", "tool_use"]
    assert starts[2]["content_block"] == {
        "type": "tool_use",
        "id": "toolu_1",
        "name": "Bash",
        "input": {},
    }
    # Every block is start, deltas, stop, with its own index, before the next one starts.
    body = [e for e in events if e["type"].startswith("content_block")]
    indexes = [e["index"] for e in body]
    assert indexes == sorted(indexes)
    for index in range(3):
        block = [e["type"] for e in body if e["index"] == index]
        assert block[0] == "content_block_start" and block[-1] == "content_block_stop"
        assert set(block[1:-1]) == {"content_block_delta"}


def test_deltas_reassemble_the_content() -> None:
    reply = Reply(
        (
            ThinkingItem("think hard", "sig"),
            TextItem("hello world"),
            ToolUseItem("Bash", {"command": "ls -la"}, "t"),
        )
    )
    deltas = [e for e in events_of(reply) if e["type"] == "content_block_delta"]

    def joined(index: int, key: str) -> str:
        return "".join(d["delta"].get(key, "") for d in deltas if d["index"] == index)

    assert joined(0, "thinking") == "think hard"
    assert joined(0, "signature") == "sig"
    assert joined(1, "text") == "hello world"
    assert json.loads(joined(2, "partial_json")) == {"command": "ls -la"}
    assert [d["delta"]["type"] for d in deltas if d["index"] == 0][-1] == "signature_delta"


def test_message_start_and_delta_carry_the_usage() -> None:
    events = events_of(Reply.text("hi"))
    start = events[0]["message"]
    assert start["usage"] == {**USAGE, "output_tokens": 1}
    assert start["content"] == [] and start["stop_reason"] is None
    delta = events[-2]
    assert delta["delta"] == {"stop_reason": "end_turn", "stop_sequence": None}
    assert delta["usage"] == {**USAGE, "output_tokens": 7}


def test_scripted_stop_reason_wins() -> None:
    events = events_of(Reply.text("cut", stop_reason="max_tokens"))
    assert events[-2]["delta"]["stop_reason"] == "max_tokens"


def test_an_error_in_the_stream_follows_message_start_and_ends_it() -> None:
    events = events_of(Reply.failure("overloaded", in_stream=True))
    assert [e["type"] for e in events] == ["message_start", "ping", "error"]
    assert events[-1]["error"] == {"type": "overloaded_error", "message": "Overloaded"}


@pytest.mark.parametrize(
    ("kind", "status", "error_type"),
    [
        ("overloaded", 529, "overloaded_error"),
        ("rate_limited", 429, "rate_limit_error"),
        ("api_error", 500, "api_error"),
        ("prompt_too_long", 400, "invalid_request_error"),
        ("authentication", 401, "authentication_error"),
        ("invalid_request", 400, "invalid_request_error"),
    ],
)
def test_error_bodies(kind: Any, status: int, error_type: str) -> None:
    got_status, body = error_body(kind)
    assert (got_status, body["type"], body["error"]["type"]) == (status, "error", error_type)
    assert error_body(kind, "custom")[1]["error"]["message"] == "custom"


def test_malformed_tool_json_does_not_parse() -> None:
    item = ToolUseItem("Bash", {"command": "ls"}, "t")
    assert json.loads(tool_input_json(item)) == {"command": "ls"}
    with pytest.raises(json.JSONDecodeError):
        json.loads(tool_input_json(item, malformed=True))
    reply = Reply((item,), faults=Faults(malformed_tool_json=True))
    raw = "".join(
        e["delta"]["partial_json"] for e in events_of(reply) if e["type"] == "content_block_delta"
    )
    with pytest.raises(json.JSONDecodeError):
        json.loads(raw)


def test_split_keeps_one_piece_for_empty_text() -> None:
    assert split("", 4) == [""]
    assert split("abcdefghij", 4) == ["abcd", "efgh", "ij"]


def test_non_streaming_body() -> None:
    reply = Reply(
        (
            ThinkingItem("t", "s"),
            TextItem("hi"),
            ToolUseItem("Read", {"file_path": "/x"}, "toolu_9"),
        )
    )
    body = message_body(reply, message_id="msg_2", model="m", usage=USAGE, output_tokens=3)
    assert body["type"] == "message" and body["role"] == "assistant"
    assert body["content"] == [
        {"type": "thinking", "thinking": "t", "signature": "s"},
        {"type": "text", "text": "hi"},
        {"type": "tool_use", "id": "toolu_9", "name": "Read", "input": {"file_path": "/x"}},
    ]
    assert body["stop_reason"] == "tool_use"
    assert body["usage"]["output_tokens"] == 3
