"""The rehearsal server over real loopback HTTP, driven by httpx, on asyncio and trio."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from runtime.rehearsal import (
    CacheRules,
    ManualClock,
    NotLoopbackError,
    PanelScript,
    RehearsalError,
    RehearsalServer,
    Reply,
    Rule,
    Script,
    open_rehearsal_server,
    parse_script,
)
from runtime.rehearsal.sse import parse_sse

pytestmark = pytest.mark.anyio

SCRIPT = parse_script(
    """
[panels.eng]
[[panels.eng.replies]]
when = { user_text_contains = "tool" }
content = [{ text = "running" }, { tool_use = "Bash", input = { command = "ls" } }]

[[panels.eng.replies]]
when = { user_text_contains = "cut" }
content = [{ text = "0123456789", repeat = 50 }]
cut_after_bytes = 600

[[panels.eng.replies]]
when = { user_text_contains = "slow" }
text = "late"
delay_first_token = 0.3

[[panels.eng.replies]]
when = { user_text_contains = "busy" }
error = "overloaded"

[[panels.eng.replies]]
text = "hello"
times = "always"

[panels.default]
[[panels.default.replies]]
text = "from the default panel"
"""
)


def body(text: str, *, stream: bool = True, **extra: Any) -> dict[str, Any]:
    return {
        "model": "claude-opus-5-5",
        "max_tokens": 1000,
        "system": [{"type": "text", "text": "R" * 6000, "cache_control": {"type": "ephemeral"}}],
        "messages": [{"role": "user", "content": text}],
        "stream": stream,
        **extra,
    }


async def test_streams_a_scripted_reply_with_usage(anyio_backend: str) -> None:
    async with open_rehearsal_server(SCRIPT) as server, httpx.AsyncClient() as client:
        url = server.base_url_for("eng") + "/v1/messages?beta=true"
        response = await client.post(url, json=body("use a tool"))
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        events = parse_sse(response.content)
        assert events[0]["type"] == "message_start" and events[-1]["type"] == "message_stop"
        tool = [e for e in events if e["type"] == "content_block_start"][1]["content_block"]
        assert tool["name"] == "Bash" and tool["id"].startswith("toolu_rehearsal_")
        assert events[-2]["delta"]["stop_reason"] == "tool_use"
        (record,) = server.requests("eng")
        assert record.source == "panels.eng.replies[0]" and record.stream
        assert record.usage is not None
        assert (
            events[0]["message"]["usage"]["cache_creation_input_tokens"]
            == record.usage.cache_creation_input_tokens
            > 0
        )
        assert events[-2]["usage"]["output_tokens"] == record.output_tokens
        assert record.cost_usd > 0


async def test_second_request_reads_the_cache_and_reports_no_divergence(anyio_backend: str) -> None:
    clock = ManualClock()
    async with open_rehearsal_server(SCRIPT, clock=clock) as server, httpx.AsyncClient() as client:
        url = server.base_url_for("eng") + "/v1/messages"
        for text in ["hi", "hi", "hello"]:
            response = await client.post(url, json=body(text, stream=False))
            assert response.json()["content"] == [{"type": "text", "text": "hello"}]
            clock.advance(10)
        first, second, third = server.requests("eng")
        assert first.usage and second.usage and third.usage
        assert (
            second.usage.cache_read_input_tokens == first.usage.cache_creation_input_tokens == 1500
        )
        assert response.json()["usage"]["cache_read_input_tokens"] == 1500
        assert second.divergence is None
        assert third.divergence is not None and third.divergence.unit == "messages[0]"
        assert third.at == 20


async def test_requests_without_a_panel_prefix_go_to_the_default_panel(anyio_backend: str) -> None:
    async with open_rehearsal_server(SCRIPT) as server, httpx.AsyncClient() as client:
        response = await client.post(server.base_url + "/v1/messages", json=body("x", stream=False))
        assert response.json()["content"][0]["text"] == "from the default panel"


async def test_unknown_paths_and_panels_get_a_404_and_are_logged(anyio_backend: str) -> None:
    async with open_rehearsal_server(SCRIPT) as server, httpx.AsyncClient() as client:
        base = server.base_url_for("eng")
        missing = await client.get(base + "/v1/models")
        assert missing.status_code == 404
        assert missing.json()["error"]["type"] == "not_found_error"
        head = await client.head(base + "/api/hello")
        assert head.status_code == 404 and head.content == b""
        stranger = await client.post(server.base_url + "/p/nobody/v1/messages", json=body("x"))
        assert stranger.status_code == 404 and "nobody" in stranger.json()["error"]["message"]
        assert [(r.method, r.path, r.panel) for r in server.other_requests] == [
            ("GET", "/p/eng/v1/models", "eng"),
            ("HEAD", "/p/eng/api/hello", "eng"),
            ("POST", "/p/nobody/v1/messages", None),
        ]
        assert server.requests("eng") == ()


async def test_count_tokens(anyio_backend: str) -> None:
    async with open_rehearsal_server(SCRIPT) as server, httpx.AsyncClient() as client:
        url = server.base_url_for("eng") + "/v1/messages/count_tokens?beta=true"
        response = await client.post(url, json=body("abcd"))
        assert response.json() == {"input_tokens": 1500 + 1}


async def test_errors_come_back_as_the_service_sends_them(anyio_backend: str) -> None:
    async with open_rehearsal_server(SCRIPT) as server, httpx.AsyncClient() as client:
        url = server.base_url_for("eng") + "/v1/messages"
        busy = await client.post(url, json=body("busy"))
        assert busy.status_code == 529
        assert busy.json()["error"]["type"] == "overloaded_error"
        assert busy.headers["retry-after"] == "0"
        not_json = await client.post(url, content=b"{nope")
        assert not_json.status_code == 400
        markers = [
            {"type": "text", "text": str(i), "cache_control": {"type": "ephemeral"}}
            for i in range(4)
        ]
        too_many = await client.post(
            url, json=body("x") | {"messages": [{"role": "user", "content": markers}]}
        )
        assert too_many.status_code == 400
        assert "Found 5" in too_many.json()["error"]["message"]
        assert [r.status for r in server.requests("eng")] == [529, 400]


async def test_a_cut_stream_ends_mid_body(anyio_backend: str) -> None:
    async with open_rehearsal_server(SCRIPT) as server, httpx.AsyncClient() as client:
        with pytest.raises(httpx.RemoteProtocolError):
            await client.post(server.base_url_for("eng") + "/v1/messages", json=body("cut"))
        # The server is still up and answers the next request on a fresh connection.
        after = await client.post(
            server.base_url_for("eng") + "/v1/messages", json=body("x", stream=False)
        )
        assert after.status_code == 200


async def test_slow_first_token(anyio_backend: str) -> None:
    async with open_rehearsal_server(SCRIPT) as server, httpx.AsyncClient() as client:
        async with client.stream(
            "POST", server.base_url_for("eng") + "/v1/messages", json=body("slow")
        ) as response:
            headers_at = time.monotonic()
            assert response.status_code == 200
            data = await response.aread()
        assert time.monotonic() - headers_at >= 0.25
        assert parse_sse(data)[-1]["type"] == "message_stop"


async def test_a_hook_that_raises_is_reported_not_fatal(anyio_backend: str) -> None:
    def hook(request: dict[str, Any]) -> Reply | None:
        raise RuntimeError("bug in test hook")

    async with (
        open_rehearsal_server(Script.from_hooks({"h": hook})) as server,
        httpx.AsyncClient() as client,
    ):
        response = await client.post(server.base_url_for("h") + "/v1/messages", json=body("x"))
        assert response.status_code == 400
        assert "bug in test hook" in response.json()["error"]["message"]
        assert server.failures == ("h: hook raised RuntimeError('bug in test hook')",)


async def test_serve_starts_under_a_task_group_and_answers_several_panels(
    anyio_backend: str,
) -> None:
    script = Script(
        {"a": PanelScript((Rule(Reply.text("from a"), times=None),)), "b": PanelScript()}
    )
    server = RehearsalServer(script, rules=CacheRules(min_cacheable_tokens=1))
    async with anyio.create_task_group() as tg:
        base_url = await tg.start(server.serve)
        assert base_url == server.base_url and base_url.startswith("http://127.0.0.1:")
        async with httpx.AsyncClient() as client:

            async def ask(panel: str) -> str:
                response = await client.post(
                    server.base_url_for(panel) + "/v1/messages", json=body("x", stream=False)
                )
                return str(response.json()["content"][0]["text"])

            assert [await ask("a"), await ask("b"), await ask("a")] == ["from a", "Done.", "from a"]
        tg.cancel_scope.cancel()
    assert len(server.requests("a")) == 2 and len(server.requests("b")) == 1


def test_only_loopback_hosts_are_accepted() -> None:
    for host in ["0.0.0.0", "192.168.1.10", "example.com"]:
        with pytest.raises(NotLoopbackError):
            RehearsalServer(SCRIPT, host=host)
    assert RehearsalServer(SCRIPT, host="localhost").host == "127.0.0.1"
    assert RehearsalServer(SCRIPT, host="::1").host == "::1"


async def test_urls_need_a_running_server_and_a_known_panel(anyio_backend: str) -> None:
    with pytest.raises(RehearsalError, match="not listening"):
        _ = RehearsalServer(SCRIPT).base_url
    async with open_rehearsal_server(SCRIPT) as server:
        assert server.base_url_for("eng") == server.base_url + "/p/eng"
        with pytest.raises(RehearsalError, match="no panel"):
            server.base_url_for("ghost")
        with pytest.raises(RehearsalError, match="no panel"):
            server.requests("ghost")


async def test_log_file_and_totals(anyio_backend: str, tmp_path: Path) -> None:
    log = tmp_path / "requests.jsonl"
    async with (
        open_rehearsal_server(SCRIPT, log_path=log) as server,
        httpx.AsyncClient() as client,
    ):
        for text in ["hi", "hi", "busy"]:
            await client.post(server.base_url_for("eng") + "/v1/messages", json=body(text))
        totals = server.totals("eng")
        assert totals == server.totals()  # the default panel made no requests
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    assert [(line["index"], line["status"]) for line in lines] == [(0, 200), (1, 200), (2, 529)]
    assert lines[1]["usage"]["cache_read_input_tokens"] == 1500
    assert lines[1]["cache"].startswith("read 1500 through system[0]")
    assert "body" not in lines[0]
    assert totals.requests == 3
    assert totals.cache_read_input_tokens == totals.cache_creation_input_tokens == 1500
    assert totals.cost_usd == pytest.approx(sum(r.cost_usd for r in server.requests("eng")))
    assert 0.4 < totals.cache_read_share < 0.5
