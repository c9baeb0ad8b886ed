"""ClaudeDriver against a fake CLI transport: the real SDK parses every frame, offline."""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator
from contextlib import aclosing
from typing import Any

import anyio
import pytest
from claude_agent_sdk import CLIConnectionError
from fake_cli import (
    AwaitInterrupt,
    FakeCli,
    Frame,
    Script,
    Step,
    UseTool,
    assistant,
    message_end,
    result,
    streamed_text,
    text,
    tool_use,
)

from runtime.claude import ClaudeDriver
from runtime.claude.events import usage_from, usage_remainder
from runtime.errors import CREDENTIALS_HELP
from runtime.turn.driver import (
    Cost,
    Decision,
    Done,
    DriverEvent,
    ErrorEvent,
    TextDelta,
    Thinking,
    ToolCall,
    ToolOutput,
    ToolResult,
    ToolSpec,
    TurnRequest,
    Usage,
)
from runtime.turn.pricing import request_cost_usd
from runtime.turn.recorder import add_usage

pytestmark = pytest.mark.anyio


async def run(script: Script, request: TurnRequest) -> tuple[list[DriverEvent], FakeCli]:
    fake = FakeCli(script)
    driver = ClaudeDriver(transport_factory=lambda: fake)
    with anyio.fail_after(10):
        events = [event async for event in driver.run_turn(request)]
    return events, fake


async def test_text_deltas_arrive_in_order_and_are_not_repeated(make_request: Any) -> None:
    async def script(cli: FakeCli) -> AsyncGenerator[Step, Any]:
        for frame in streamed_text("msg_1", "Hel", "lo", " there"):
            yield frame
        yield assistant({"type": "thinking", "thinking": "hmm", "signature": "sig"})
        yield assistant(text("Hello there"))  # the same text, whole: must not come again
        usage = {"input_tokens": 10, "output_tokens": 4, "cache_read_input_tokens": 900}
        yield result(usage=usage | {"cache_creation_input_tokens": 50}, cost=0.0123)

    request = make_request()
    events, fake = await run(script, request)

    assert events == [
        TextDelta("Hel"),
        TextDelta("lo"),
        TextDelta(" there"),
        Thinking("hmm", "sig"),
        Usage(10, 4, cache_creation_input_tokens=50, cache_read_input_tokens=900),
        Cost(0.0123),
        Done("end_turn"),
    ]
    # Exactly one user message whose content is the session's blocks, verbatim (the marker too).
    assert len(fake.prompts) == 1
    assert fake.prompts[0]["message"] == {"role": "user", "content": list(request.blocks)}
    assert fake.prompts[0]["client_composed"] is True  # verbatim_prompts: no @path expansion
    hook = fake.initialize["hooks"]["PreToolUse"][0]
    assert hook["matcher"] is None and hook["onFailure"] == "block"
    assert not any(f.get("request", {}).get("subtype") == "interrupt" for f in fake.written)


async def test_whole_message_text_is_used_when_no_deltas_came(make_request: Any) -> None:
    async def script(cli: FakeCli) -> AsyncGenerator[Step, Any]:
        yield assistant(text("whole reply"), message_id="msg_9")
        yield result(stop_reason="max_tokens")

    events, _ = await run(script, make_request())
    assert events[0] == TextDelta("whole reply")
    assert events[-1] == Done("max_tokens")
    assert sum(isinstance(e, TextDelta) for e in events) == 1


async def test_allowed_call_runs_and_the_approver_is_asked_once(
    make_request: Any, approver: Any
) -> None:
    async def script(cli: FakeCli) -> AsyncGenerator[Step, Any]:
        yield assistant(tool_use("toolu_1", "Bash", {"command": "touch x"}))
        yield UseTool("toolu_1", "Bash", {"command": "touch x"})
        yield assistant(tool_use("toolu_1", "Bash", {"command": "touch x"}), message_id="msg_1")
        yield result()

    events, fake = await run(script, make_request())

    run_ = fake.tool_runs["toolu_1"]
    assert run_.hook_answers == [{}]  # allowed: no opinion, the CLI's own rules go on
    assert run_.permission == {"behavior": "allow", "updatedInput": {"command": "touch x"}}
    assert run_.ran_with == {"command": "touch x"}
    assert [c.tool_use_id for c in approver.asked] == ["toolu_1"]  # hook + can_use_tool: once
    calls = [e for e in events if isinstance(e, ToolCall)]
    assert calls == [ToolCall("toolu_1", "Bash", {"command": "touch x"})]  # never twice
    assert ToolResult("toolu_1", 'ran Bash {"command": "touch x"}') in events


async def test_denied_call_gives_the_model_the_approvers_message(
    make_request: Any, approver: Any
) -> None:
    approver.rule = lambda call: Decision(allow=False, message="no writes in this panel")

    async def script(cli: FakeCli) -> AsyncGenerator[Step, Any]:
        yield assistant(tool_use("toolu_2", "Write", {"file_path": "/etc/x", "content": ""}))
        yield UseTool("toolu_2", "Write", {"file_path": "/etc/x", "content": ""})
        yield result()

    events, fake = await run(script, make_request())

    run_ = fake.tool_runs["toolu_2"]
    decision = run_.hook_answers[0]["hookSpecificOutput"]
    assert decision["permissionDecision"] == "deny"
    assert decision["permissionDecisionReason"] == "no writes in this panel"
    assert run_.ran_with is None and run_.permission is None
    said = "PreToolUse:Write hook error: no writes in this panel"  # the real CLI's wording
    assert ToolResult("toolu_2", said, is_error=True) in events


@pytest.mark.parametrize("auto_approved", [False, True])
async def test_updated_input_is_what_runs(
    make_request: Any, approver: Any, auto_approved: bool
) -> None:
    approver.rule = lambda call: Decision(allow=True, updated_input={"command": "echo safe"})

    async def script(cli: FakeCli) -> AsyncGenerator[Step, Any]:
        yield UseTool("toolu_3", "Bash", {"command": "rm -rf /"}, auto_approved=auto_approved)
        yield result()

    _, fake = await run(script, make_request())
    assert fake.tool_runs["toolu_3"].ran_with == {"command": "echo safe"}
    assert len(approver.asked) == 1


async def test_read_only_calls_the_cli_auto_approves_still_reach_the_approver(
    make_request: Any, approver: Any
) -> None:
    approver.rule = lambda call: Decision(allow=False, message="not even ls")

    async def script(cli: FakeCli) -> AsyncGenerator[Step, Any]:
        yield UseTool("toolu_4", "Bash", {"command": "ls"}, auto_approved=True)
        yield result()

    events, fake = await run(script, make_request())
    assert fake.tool_runs["toolu_4"].ran_with is None
    assert [c.name for c in approver.asked] == ["Bash"]
    assert ToolResult("toolu_4", "PreToolUse:Bash hook error: not even ls", is_error=True) in events


async def test_in_process_tools_run_through_the_sdk_mcp_server(
    make_request: Any, approver: Any
) -> None:
    seen: list[dict[str, Any]] = []

    async def note(args: dict[str, Any]) -> ToolOutput:
        seen.append(args)
        return ToolOutput(f"noted {args['text']}")

    async def broken(args: dict[str, Any]) -> ToolOutput:
        raise RuntimeError("disk full")

    schema = {"type": "object", "properties": {"text": {"type": "string"}}}
    tools = (ToolSpec("note", "Take a note", schema, note), ToolSpec("broken", "x", {}, broken))

    async def script(cli: FakeCli) -> AsyncGenerator[Step, Any]:
        yield UseTool("toolu_5", "mcp__mnemara__note", {"text": "hi"})
        yield UseTool("toolu_6", "mcp__mnemara__broken", {})
        yield result()

    events, _ = await run(script, make_request(sdk_tools=tools))

    assert seen == [{"text": "hi"}]
    assert ToolResult("toolu_5", "noted hi") in events
    failed = next(e for e in events if isinstance(e, ToolResult) and e.tool_use_id == "toolu_6")
    assert failed.is_error and "disk full" in failed.content
    assert [c.name for c in approver.asked] == ["mcp__mnemara__note", "mcp__mnemara__broken"]


OVERLOADED = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
ERRORS = {
    "credentials": ("authentication_failed", "Not logged in · Please run /login", None),
    "overloaded": (
        "overloaded",
        f"API Error: 529 {json.dumps(OVERLOADED)}",
        529,
    ),
    "rate_limited": ("rate_limit", "API Error: 429 rate_limit_error", 429),
    "prompt_too_long": ("invalid_request", "Prompt is too long", 400),
}


@pytest.mark.parametrize("kind", ERRORS)
async def test_failed_turns_map_to_error_kinds_and_end_without_done(
    make_request: Any, kind: str
) -> None:
    code, said, status = ERRORS[kind]

    async def script(cli: FakeCli) -> AsyncGenerator[Step, Any]:
        yield assistant(text(said), error=code)
        yield result(is_error=True, text=said, status=status, cost=0.0)

    events, _ = await run(script, make_request())

    error = events[-1]
    assert isinstance(error, ErrorEvent) and error.kind == kind
    assert not any(isinstance(e, (Done, TextDelta)) for e in events)  # the error prose is no reply
    assert error.retryable == (kind in ("overloaded", "rate_limited"))
    if kind == "credentials":
        assert CREDENTIALS_HELP in error.message


async def test_an_sdk_exception_becomes_an_error_event(make_request: Any) -> None:
    async def script(cli: FakeCli) -> AsyncGenerator[Step, Any]:
        for frame in streamed_text("msg_1", "par"):
            yield frame
        raise CLIConnectionError("Failed to write to process stdin: broken pipe")

    events, _ = await run(script, make_request())
    assert events[0] == TextDelta("par")
    assert isinstance(events[-1], ErrorEvent) and events[-1].kind == "connection"


async def test_a_turn_without_a_result_is_a_cli_error(make_request: Any) -> None:
    async def script(cli: FakeCli) -> AsyncGenerator[Step, Any]:
        yield assistant(text("half"))
        # The fake's stdout ends once its stdin is closed: closing it here ends the stream
        # with no result, as when a CLI exits in the middle of a turn.
        await cli.end_input()

    events, _ = await run(script, make_request())
    assert events[0] == TextDelta("half")
    assert isinstance(events[-1], ErrorEvent) and events[-1].kind == "cli"


@pytest.mark.parametrize("how", ["aclose", "cancel"])
async def test_stopping_mid_turn_interrupts_the_cli_and_closes_it(
    make_request: Any, how: str
) -> None:
    async def script(cli: FakeCli) -> AsyncGenerator[Step, Any]:
        for frame in streamed_text("msg_1", "partial"):
            yield frame
        yield AwaitInterrupt()

    fake = FakeCli(script)
    driver = ClaudeDriver(transport_factory=lambda: fake)
    got: list[DriverEvent] = []
    with anyio.fail_after(10):
        if how == "aclose":
            async with aclosing(driver.run_turn(make_request())) as events:
                async for event in events:
                    got.append(event)
                    break
        else:
            with anyio.CancelScope() as scope:
                async for event in driver.run_turn(make_request()):
                    got.append(event)
                    scope.cancel()
    assert got == [TextDelta("partial")]
    assert fake.interrupted and fake.closed


# -- usage: one event per model request, as soon as the request's counts are final ------------
SONNET = "claude-sonnet-4-6"
FIRST = {"input_tokens": 20, "output_tokens": 30, "cache_creation_input_tokens": 2000}
SECOND = {"input_tokens": 5, "output_tokens": 12, "cache_read_input_tokens": 2000}


def summed(*usages: dict[str, int]) -> dict[str, int]:
    keys = {k for u in usages for k in u}
    return {k: sum(u.get(k, 0) for u in usages) for k in keys}


def request_frames(message_id: str, usage: dict[str, int], *blocks: Frame) -> list[Step]:
    """One model request as the CLI streams it: the start with its input counts, the whole
    messages (one per block, each with the start's usage), then the delta with the final usage."""
    start_usage = usage | {"output_tokens": 1}
    return [
        *streamed_text(message_id, "…", usage=usage, model=SONNET),
        *(assistant(b, message_id=message_id, usage=start_usage, model=SONNET) for b in blocks),
        *message_end(usage),
    ]


def request_usd(usage: dict[str, int]) -> float:
    return request_cost_usd(
        SONNET,
        input_tokens=usage.get("input_tokens", 0),
        output_tokens=usage.get("output_tokens", 0),
        cache_write_5m_tokens=usage.get("cache_creation_input_tokens", 0),
        cache_read_tokens=usage.get("cache_read_input_tokens", 0),
    )


def two_request_script(total: dict[str, int], cost: float) -> Script:
    async def script(cli: FakeCli) -> AsyncGenerator[Step, Any]:
        for frame in request_frames(
            "msg_1", FIRST, text("Looking."), tool_use("toolu_1", "Bash", {"command": "ls"})
        ):
            yield frame
        yield UseTool("toolu_1", "Bash", {"command": "ls"})
        for frame in request_frames("msg_2", SECOND, text("Done.")):
            yield frame
        yield result(usage=total, cost=cost)

    return script


async def test_each_model_request_is_reported_once_and_they_sum_to_the_result(
    make_request: Any,
) -> None:
    events, _ = await run(two_request_script(summed(FIRST, SECOND), 0.02), make_request())

    usages = [e for e in events if isinstance(e, Usage)]
    assert usages == [usage_from(FIRST), usage_from(SECOND)]  # output from the deltas, not 1
    assert add_usage(*usages) == usage_from(summed(FIRST, SECOND))  # nothing left over
    # The first request's usage reaches the consumer before its tool runs: a budget sees it.
    assert events.index(usages[0]) < events.index(
        ToolResult("toolu_1", 'ran Bash {"command": "ls"}')
    )
    costs = [e.usd for e in events if isinstance(e, Cost)]
    first, both = request_usd(FIRST), request_usd(FIRST) + request_usd(SECOND)
    assert costs == [pytest.approx(first), pytest.approx(both), 0.02]  # the SDK's total last
    assert events[-1] == Done("end_turn")


async def test_a_stopped_turn_keeps_the_usage_of_the_request_that_finished(
    make_request: Any,
) -> None:
    async def script(cli: FakeCli) -> AsyncGenerator[Step, Any]:
        for frame in request_frames("msg_1", FIRST, tool_use("toolu_1", "Bash", {"command": "ls"})):
            yield frame
        yield UseTool("toolu_1", "Bash", {"command": "ls"})
        for frame in streamed_text("msg_2", "half way", usage=SECOND, model=SONNET):
            yield frame
        yield AwaitInterrupt()

    got: list[DriverEvent] = []
    driver = ClaudeDriver(transport_factory=lambda: FakeCli(script))
    with anyio.fail_after(10):
        async with aclosing(driver.run_turn(make_request())) as stream:
            async for event in stream:
                got.append(event)
                if event == TextDelta("half way"):
                    break
    assert [e for e in got if isinstance(e, Usage)] == [usage_from(FIRST)]
    assert [e for e in got if isinstance(e, Cost)] == [Cost(pytest.approx(request_usd(FIRST)))]


async def test_what_the_result_adds_beyond_the_requests_comes_as_one_more_usage(
    make_request: Any,
) -> None:
    # e.g. a request of a subagent, whose messages are not the turn's own
    extra = {"input_tokens": 100, "output_tokens": 8}
    events, _ = await run(two_request_script(summed(FIRST, SECOND, extra), 0.05), make_request())

    usages = [e for e in events if isinstance(e, Usage)]
    assert usages == [usage_from(FIRST), usage_from(SECOND), Usage(100, 8)]
    assert [e for e in events if isinstance(e, Cost)][-1] == Cost(0.05)


async def test_a_result_total_below_the_reported_sum_adds_nothing(make_request: Any) -> None:
    events, _ = await run(two_request_script(FIRST, 0.02), make_request())
    assert [e for e in events if isinstance(e, Usage)] == [usage_from(FIRST), usage_from(SECOND)]


async def test_without_stream_events_a_request_is_reported_at_its_first_message(
    make_request: Any,
) -> None:
    start = FIRST | {"output_tokens": 1}

    async def script(cli: FakeCli) -> AsyncGenerator[Step, Any]:
        yield assistant(text("Looking."), message_id="msg_1", usage=start, model=SONNET)
        yield assistant(
            tool_use("toolu_1", "Bash", {"command": "ls"}), message_id="msg_1", usage=start
        )
        yield UseTool("toolu_1", "Bash", {"command": "ls"})
        yield assistant(text("Done."), message_id="msg_2", usage=SECOND | {"output_tokens": 1})
        yield result(usage=summed(FIRST, SECOND), cost=0.02)

    events, _ = await run(script, make_request())
    usages = [e for e in events if isinstance(e, Usage)]
    # Split messages of one response count once; the output they lack comes with the result.
    assert usages == [usage_from(start), usage_from(SECOND | {"output_tokens": 1}), Usage(0, 40)]
    assert events.index(usages[0]) < events.index(ToolCall("toolu_1", "Bash", {"command": "ls"}))


def test_usage_remainder_is_never_negative() -> None:
    assert usage_remainder(Usage(10, 5), Usage(10, 5)) is None
    assert usage_remainder(Usage(8, 9), Usage(10, 5)) == Usage(0, 4)
    assert usage_remainder(Usage(8, 5), Usage(10, 5)) is None
