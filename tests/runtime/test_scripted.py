"""ScriptedDriver: replays scripts, records requests, gates tool calls like the live driver."""

from __future__ import annotations

from typing import Any

import pytest

from runtime.turn.driver import (
    Decision,
    Done,
    DriverEvent,
    ErrorEvent,
    TextDelta,
    ToolCall,
    ToolOutput,
    ToolResult,
    ToolSpec,
    TurnRequest,
    Usage,
)
from runtime.turn.scripted import ScriptedDriver

pytestmark = pytest.mark.anyio


async def collect(driver: ScriptedDriver, request: TurnRequest) -> list[DriverEvent]:
    return [event async for event in driver.run_turn(request)]


class Notes:
    """An in-process tool that records what it was called with."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []
        self.spec = ToolSpec("note", "Take a note", {"type": "object", "properties": {}}, self.run)

    async def run(self, args: dict[str, Any]) -> ToolOutput:
        self.calls.append(args)
        if args.get("explode"):
            raise ValueError("no paper")
        return ToolOutput(f"noted {args.get('text')}")


async def test_turns_replay_in_order_and_requests_are_recorded(make_request: Any) -> None:
    driver = ScriptedDriver(
        [
            [TextDelta("one"), Usage(10, 1), Done()],
            lambda request: [TextDelta(f"saw {len(request.blocks)} blocks"), Done()],
        ]
    )
    first, second = make_request(), make_request(blocks=({"type": "text", "text": "x"},))
    assert await collect(driver, first) == [TextDelta("one"), Usage(10, 1), Done()]
    assert await collect(driver, second) == [TextDelta("saw 1 blocks"), Done()]
    assert driver.requests == [first, second]


async def test_running_out_of_script_is_an_error_event(make_request: Any) -> None:
    driver = ScriptedDriver([[Done()]])
    await collect(driver, make_request())
    events = await collect(driver, make_request())
    assert len(events) == 1 and isinstance(events[0], ErrorEvent)
    assert events[0].kind == "other" and "script exhausted" in events[0].message
    assert len(driver.requests) == 2


async def test_nothing_follows_an_error_event(make_request: Any) -> None:
    driver = ScriptedDriver([[TextDelta("a"), ErrorEvent("overloaded", "529"), Done()]])
    assert await collect(driver, make_request()) == [
        TextDelta("a"),
        ErrorEvent("overloaded", "529"),
    ]


@pytest.mark.parametrize("name", ["mcp__mnemara__note", "note"])
async def test_allowed_calls_to_our_tools_run_them(make_request: Any, name: str) -> None:
    notes = Notes()
    driver = ScriptedDriver([[ToolCall("t1", name, {"text": "hi"}), Done()]])
    events = await collect(driver, make_request(sdk_tools=(notes.spec,)))
    assert events == [ToolCall("t1", name, {"text": "hi"}), ToolResult("t1", "noted hi"), Done()]
    assert notes.calls == [{"text": "hi"}]


async def test_the_approvers_rewritten_input_is_what_runs(make_request: Any, approver: Any) -> None:
    approver.rule = lambda call: Decision(allow=True, updated_input={"text": "safe"})
    notes = Notes()
    driver = ScriptedDriver([[ToolCall("t1", "mcp__mnemara__note", {"text": "risky"})]])
    events = await collect(driver, make_request(sdk_tools=(notes.spec,)))
    assert notes.calls == [{"text": "safe"}] and ToolResult("t1", "noted safe") in events


async def test_a_scripted_result_is_kept_and_the_tool_not_run(make_request: Any) -> None:
    notes = Notes()
    script = [ToolCall("t1", "note", {"text": "hi"}), ToolResult("t1", "from the script"), Done()]
    events = await collect(ScriptedDriver([script]), make_request(sdk_tools=(notes.spec,)))
    assert events == script and notes.calls == []


async def test_a_refused_call_gets_the_message_and_never_runs(
    make_request: Any, approver: Any
) -> None:
    approver.rule = lambda call: Decision(allow=False, message="notes are off today")
    notes = Notes()
    script = [ToolCall("t1", "note", {"text": "hi"}), ToolResult("t1", "would have run"), Done()]
    events = await collect(ScriptedDriver([script]), make_request(sdk_tools=(notes.spec,)))
    assert events == [
        ToolCall("t1", "note", {"text": "hi"}),
        ToolResult("t1", "notes are off today", is_error=True),
        Done(),
    ]
    assert notes.calls == []


async def test_the_approver_is_asked_once_per_call(make_request: Any, approver: Any) -> None:
    call = ToolCall("t1", "Bash", {"command": "ls"})
    await collect(
        ScriptedDriver([[call, call, ToolCall("t2", "Read", {}), Done()]]), make_request()
    )
    assert [c.tool_use_id for c in approver.asked] == ["t1", "t2"]


async def test_native_tools_and_failing_handlers(make_request: Any) -> None:
    notes = Notes()
    script = [ToolCall("t1", "Bash", {}), ToolCall("t2", "note", {"explode": True}), Done()]
    events = await collect(ScriptedDriver([script]), make_request(sdk_tools=(notes.spec,)))
    assert events[:2] == script[:2]  # a native tool's result is the script's business
    failed = events[2]
    assert isinstance(failed, ToolResult) and failed.is_error and "no paper" in failed.content
