"""Usage per model request through a session: drivers report one `Usage` per request, and the
session adds them up for its rows, its `last_usage` and its budget, between requests too."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from runtime.guard.halts import Halted
from runtime.instance.home import InstancePaths
from runtime.turn.driver import Cost, Done, DriverEvent, TextDelta, ToolCall, ToolResult, Usage
from runtime.turn.open import open_session
from runtime.turn.scripted import ScriptedDriver

pytestmark = pytest.mark.anyio


async def run(session: object, text: str) -> list[object]:
    return [e async for e in session.turn(text)]  # type: ignore[attr-defined]


def two_requests(*, second_call: str) -> list[DriverEvent]:
    """A turn of two model requests, each reported as it finishes, each calling a tool."""
    return [
        TextDelta("looking"),
        Usage(1000, 30, cache_creation_input_tokens=200),
        Cost(0.01),
        ToolCall("c1", "Bash", {"command": "ls"}),
        ToolResult("c1", "a.txt"),
        TextDelta(" and then"),
        Usage(900, 12, cache_read_input_tokens=1200),
        Cost(0.015),  # the turn's running total, not this request's
        ToolCall("c2", "Bash", {"command": second_call}),
        ToolResult("c2", "done"),
        Done(),
    ]


async def test_a_turns_requests_are_summed_for_its_row_last_usage_and_spend(
    instance: InstancePaths, approver: object
) -> None:
    driver = ScriptedDriver([two_requests(second_call="cat a.txt")])
    async with open_session("t1", driver=driver, approver=approver) as s:  # type: ignore[arg-type]
        await run(s, "look around")
        reply = (await s.store.rows())[-1]
        last_usage = json.loads(await s.store.get_meta("last_usage") or "{}")
        spend = s.guard.spend()
    assert reply.tokens == 42 and reply.tokens_exact  # 30 + 12 output tokens
    assert last_usage == {
        "input_tokens": 1900,
        "output_tokens": 42,
        "cache_creation_input_tokens": 200,
        "cache_read_input_tokens": 1200,
        "cost_usd": 0.015,
    }
    assert spend["requests"] == 2
    assert spend["input_tokens"] == 1200 + 2100 and spend["output_tokens"] == 42
    assert spend["usd"] == 0.015


async def test_a_per_turn_input_budget_stops_the_call_after_the_request_that_crossed_it(
    instance: InstancePaths, approver: object, configure: Callable[..., Any]
) -> None:
    configure(limits={"budget": {"max_turn_input_tokens": 2000}})
    driver = ScriptedDriver([two_requests(second_call="rm -rf build")])
    async with open_session("t1", driver=driver, approver=approver) as s:  # type: ignore[arg-type]
        events = await run(s, "clean up")
        reply = (await s.store.rows())[-1]
        spend = s.guard.spend()
    results = [e for e in events if isinstance(e, ToolResult)]
    # The first request (1,200 prompt tokens) left room for its call; the second (2,100 more)
    # crossed the limit, so its call was refused before it ran.
    assert results[0] == ToolResult("c1", "a.txt")
    assert results[1].is_error and results[1].content.startswith("[BUDGET HALT] turn_input_tokens")
    (halted,) = [e for e in events if isinstance(e, Halted)]
    assert dict(halted.record.figures) == {"spent": 3300.0, "limit": 2000.0}
    assert reply.blocks[-1]["text"].startswith("[BUDGET HALT] turn_input_tokens")
    assert reply.tokens == 42 and spend["requests"] == 2
