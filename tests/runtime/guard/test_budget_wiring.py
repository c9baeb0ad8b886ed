"""Hard budgets on a session: checked before every call from the reported usage and cost,
handed to the SDK per turn, and a panel that reaches one stops with nothing in flight lost."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from guard_kit import RecordingPolicy, run

from runtime.errors import PanelHaltedError
from runtime.guard.halts import Halted
from runtime.instance.guard_settings import BudgetSettings
from runtime.instance.home import InstancePaths
from runtime.turn.driver import Cost, Done, TextDelta, ToolCall, ToolResult, Usage
from runtime.turn.open import open_session
from runtime.turn.scripted import ScriptedDriver

pytestmark = pytest.mark.anyio


def halt_records(instance: InstancePaths) -> list[dict[str, Any]]:
    lines = instance.debug_log.read_text(encoding="utf-8").splitlines()
    return [r for r in map(json.loads, lines) if r["kind"] == "halt"]


async def test_a_turn_budget_stops_the_next_call_and_keeps_what_was_said(
    instance: InstancePaths, policy: RecordingPolicy, configure: Callable[..., Any]
) -> None:
    configure(limits={"budget": {"max_turn_usd": 0.25}})
    expensive = [
        TextDelta("partial answer"),
        Usage(1000, 200),
        Cost(0.5),  # the SDK's running total for this turn
        ToolCall("d1", "Bash", {"command": "make deploy"}),
        ToolResult("d1", "deployed"),
        TextDelta(" and the rest"),
        Done(),
    ]
    driver = ScriptedDriver([expensive, [TextDelta("fine"), Cost(0.1), Done()]])
    async with open_session("t1", driver=driver, approver=policy) as s:
        events = await run(s, "deploy it")
        rows = await s.store.rows()
        with pytest.raises(PanelHaltedError, match="BUDGET HALT"):
            await run(s, "next")
        await s.resume(BudgetSettings(max_turn_usd=1.0))
        resumed = await run(s, "go on")
    assert driver.requests[0].max_budget_usd == 0.25  # the per-turn cap went to the SDK too
    assert driver.requests[1].max_budget_usd == 1.0
    assert policy.asked == []  # the budget refused before the policy was asked
    result = next(e for e in events if isinstance(e, ToolResult))
    assert result.is_error and result.content.startswith("[BUDGET HALT] turn_usd")
    (halted,) = [e for e in events if isinstance(e, Halted)]
    assert halted.record.source == "budget"
    assert dict(halted.record.figures) == {"spent": 0.5, "limit": 0.25}
    user, reply = rows
    assert user.status == "complete" and user.blocks[0]["text"] == "deploy it"
    assert reply.blocks[0]["text"] == "partial answer"
    assert reply.blocks[-1]["text"].startswith("[BUDGET HALT] turn_usd: the panel reached")
    assert "and the rest" not in json.dumps(reply.blocks)
    (record,) = halt_records(instance)
    assert record["event"] == "budget_halt" and record["rule"] == "turn_usd"
    assert any(isinstance(e, TextDelta) and e.text == "fine" for e in resumed)


async def test_the_session_turn_budget_refuses_the_next_turn(
    instance: InstancePaths, policy: RecordingPolicy, configure: Callable[..., Any]
) -> None:
    configure(limits={"budget": {"max_session_turns": 1}})
    driver = ScriptedDriver([[TextDelta("one"), Done()]])
    async with open_session("t1", driver=driver, approver=policy) as s:
        await run(s, "first")
        with pytest.raises(PanelHaltedError) as caught:
            await run(s, "second")
        rows = await s.store.rows()
        halt = json.loads(await s.store.get_meta("halt") or "{}")
    assert "budget of 1 turns this session" in str(caught.value)
    assert "Your input was not sent" in str(caught.value)
    assert caught.value.record.rule == "session_turns"
    assert len(rows) == 2 and len(driver.requests) == 1
    assert halt["rule"] == "session_turns" and halt["user_row_id"] is None
    # A new session is a new budget: it opens unhalted, the record stays in debug.log.
    driver = ScriptedDriver([[TextDelta("again"), Done()]])
    async with open_session("t1", driver=driver, approver=policy) as s:
        assert await s.store.get_meta("halt") == ""
        await run(s, "second, in a new session")
    assert [r["rule"] for r in halt_records(instance)] == ["session_turns"]


async def test_a_session_dollar_budget_halts_at_the_end_of_the_turn_that_spent_it(
    instance: InstancePaths, policy: RecordingPolicy, configure: Callable[..., Any]
) -> None:
    configure(limits={"budget": {"max_session_usd": 1.0}})
    driver = ScriptedDriver([[TextDelta("big answer"), Usage(5000, 900), Cost(1.2), Done()]])
    async with open_session("t1", driver=driver, approver=policy) as s:
        events = await run(s, "write a novel")
        reply = (await s.store.rows())[-1]
        spend = json.loads(await s.store.get_meta("spend") or "{}")
        with pytest.raises(PanelHaltedError):
            await run(s, "another")
    assert any(isinstance(e, Halted) for e in events)
    assert reply.blocks[0]["text"] == "big answer"
    assert reply.blocks[-1]["text"].startswith("[BUDGET HALT] session_usd")
    assert spend == {
        "turns": 1, "requests": 1, "input_tokens": 5000, "output_tokens": 900, "usd": 1.2,
        "limits": {"max_session_usd": 1.0}, "sentinel": "on",
    }  # fmt: skip


async def test_a_resume_while_the_halting_turn_commits_leaves_no_halt_stored_as_current(
    instance: InstancePaths,
    policy: RecordingPolicy,
    configure: Callable[..., Any],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    configure(limits={"budget": {"max_session_usd": 1.0}})
    driver = ScriptedDriver(
        [[TextDelta("big answer"), Cost(1.2), Done()], [TextDelta("more"), Done()]]
    )
    async with open_session("t1", driver=driver, approver=policy) as s:
        store_run = s.store.run

        async def resume_then_run(*args: Any, **kwargs: Any) -> Any:
            if s.halted is not None and s.in_flight_row is not None:  # the halting turn's commit
                await s.resume(BudgetSettings(max_session_usd=5.0))  # the operator, just now
            return await store_run(*args, **kwargs)

        monkeypatch.setattr(s.store, "run", resume_then_run)
        events = await run(s, "write a novel")
        stored = await s.store.get_meta("halt")
        again = await run(s, "go on")
    assert any(isinstance(e, Halted) for e in events)  # the turn was halted, and says so
    assert stored == ""  # the resume stands: no current halt on disk for `mnemara show`
    assert [r["rule"] for r in halt_records(instance)] == ["session_usd"]
    assert any(isinstance(e, TextDelta) and e.text == "more" for e in again)


async def test_without_limits_nothing_is_capped(
    instance: InstancePaths, policy: RecordingPolicy
) -> None:
    driver = ScriptedDriver([[TextDelta("x"), Cost(50.0), Done()]] * 3)
    async with open_session("t1", driver=driver, approver=policy) as s:
        for text in ("a", "b", "c"):
            await run(s, text)
        assert s.halted is None
    assert driver.requests[0].max_budget_usd is None
