"""The runtime sentinel on a session's live path: a polling loop is stopped before its third
call runs, the turn ends with the notice, a halt record is written, and resume() clears it."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from guard_kit import RecordingPolicy, no_git, run

from runtime.driver import (
    Done,
    DriverEvent,
    TextDelta,
    ToolCall,
    ToolOutput,
    ToolResult,
    ToolSpec,
    Usage,
)
from runtime.errors import PanelHaltedError
from runtime.guard.halts import Halted
from runtime.home import InstancePaths
from runtime.scripted import ScriptedDriver
from runtime.session import open_session
from runtime.store import TurnStore

pytestmark = pytest.mark.anyio

BUILD = {"command": "npm run build"}


def polling_turn() -> list[DriverEvent]:
    events: list[DriverEvent] = [TextDelta("Building. ")]
    for i in (1, 2, 3):
        events += [ToolCall(f"b{i}", "Bash", dict(BUILD)), ToolResult(f"b{i}", "building...")]
    return [*events, TextDelta("never said"), Usage(10, 5), Done()]


def debug_records(instance: InstancePaths) -> list[dict[str, Any]]:
    lines = instance.debug_log.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines]


@pytest.fixture
def sentinel_on(configure: Callable[..., Any]) -> None:
    configure(runtime_sentinel=True)


async def test_polling_loop_halts_before_the_third_call_and_resumes(
    instance: InstancePaths, policy: RecordingPolicy, sentinel_on: None
) -> None:
    after_resume = [ToolCall("b4", "Bash", dict(BUILD)), ToolResult("b4", "built"), Done()]
    driver = ScriptedDriver([polling_turn(), after_resume])
    async with open_session("t1", driver=driver, approver=policy, git_probe=no_git) as s:
        events = await run(s, "run the build and tell me when it's done")
        rows = await s.store.rows()
        assert s.halted is not None
        with pytest.raises(PanelHaltedError, match="is halted: \\[SENTINEL HALT\\] repeat"):
            await run(s, "are you there?")
        assert len(await s.store.rows()) == len(rows)  # the refused input was not stored
        await s.resume()
        resumed = await run(s, "check once more")
        meta_after = await s.store.get_meta("halt")

    # The third call never reached the policy and got the notice instead of its output.
    assert [c.tool_use_id for c in policy.asked] == ["b1", "b2", "b4"]
    third = next(e for e in events if isinstance(e, ToolResult) and e.tool_use_id == "b3")
    assert third.is_error and third.content.startswith("[SENTINEL HALT] repeat: Bash called 3")
    # The turn ended there: nothing the script said after the halted call was consumed.
    assert not any(isinstance(e, TextDelta) and e.text == "never said" for e in events)
    (halted,) = [e for e in events if isinstance(e, Halted)]
    user, reply = rows
    assert user.status == "complete" and reply.role == "assistant"
    assert reply.blocks[0] == {"type": "text", "text": "Building. "}
    assert reply.blocks[-1]["text"] == halted.record.notice()
    outputs = [b["content"] for b in reply.blocks if b["type"] == "tool_result"]
    assert outputs[:2] == ["building...", "building..."] and outputs[2].startswith("[SENTINEL")
    # The halt record: rule, evidence (the calls and their row), turn and time.
    record = halted.record
    assert record.rule == "repeat" and record.turn == 1
    assert [(c.tool_use_id, c.row_id) for c in record.calls] == [
        ("b1", reply.id), ("b2", reply.id), ("b3", reply.id)
    ]  # fmt: skip
    (logged,) = [r for r in debug_records(instance) if r["kind"] == "halt"]
    assert logged["event"] == "sentinel_halt" and logged["user_row_id"] == user.id
    assert [c["row_id"] for c in logged["calls"]] == [reply.id] * 3
    # After resume the same call runs, and the current halt is cleared.
    assert any(isinstance(e, ToolResult) and e.content == "built" for e in resumed)
    assert meta_after == ""


async def test_the_third_call_of_an_in_process_tool_never_runs(
    instance: InstancePaths, policy: RecordingPolicy, sentinel_on: None
) -> None:
    ran: list[dict[str, Any]] = []

    async def poll(args: dict[str, Any]) -> ToolOutput:
        ran.append(args)
        return ToolOutput("still running")

    spec = ToolSpec("poll_job", "Poll a job.", {"type": "object", "properties": {}}, poll)
    calls = [ToolCall(f"p{i}", "mcp__mnemara__poll_job", {"job": "build"}) for i in range(3)]
    driver = ScriptedDriver([[*calls, Done()]])
    async with open_session(
        "t1", driver=driver, approver=policy, tools=[spec], git_probe=no_git
    ) as s:
        events = await run(s, "wait for the job")
    assert ran == [{"job": "build"}, {"job": "build"}]
    assert any(isinstance(e, Halted) for e in events)


async def test_a_repeat_after_each_edit_is_progress_not_a_loop(
    instance: InstancePaths, policy: RecordingPolicy, sentinel_on: None
) -> None:
    status = {"command": "git status"}
    events: list[DriverEvent] = []
    for i in range(3):
        events += [ToolCall(f"s{i}", "Bash", dict(status)), ToolResult(f"s{i}", "modified: a")]
        edit = {"file_path": f"/w/f{i}.py", "old_string": "a", "new_string": "b"}
        events += [ToolCall(f"e{i}", "Edit", edit), ToolResult(f"e{i}", "edited")]
    driver = ScriptedDriver([[*events, TextDelta("all edited"), Done()]])
    async with open_session("t1", driver=driver, approver=policy, git_probe=no_git) as s:
        out = await run(s, "edit the three files")
        assert s.halted is None
    assert len(policy.asked) == 6
    assert not any(isinstance(e, Halted) for e in out)


async def test_call_history_resets_when_a_turn_ends(
    instance: InstancePaths, policy: RecordingPolicy, sentinel_on: None
) -> None:
    two = [ToolCall("a", "Bash", dict(BUILD)), ToolCall("b", "Bash", dict(BUILD)), Done()]
    one = [ToolCall("c", "Bash", dict(BUILD)), Done()]
    driver = ScriptedDriver([two, one])
    async with open_session("t1", driver=driver, approver=policy, git_probe=no_git) as s:
        await run(s, "first")
        await run(s, "second")
        assert s.halted is None
    assert [c.tool_use_id for c in policy.asked] == ["a", "b", "c"]


async def test_shadow_mode_records_and_stops_nothing(
    instance: InstancePaths, policy: RecordingPolicy, configure: Callable[..., Any]
) -> None:
    configure(runtime_sentinel=True, limits={"sentinel": {"shadow": True}})
    driver = ScriptedDriver([polling_turn()])
    async with open_session("t1", driver=driver, approver=policy, git_probe=no_git) as s:
        events = await run(s, "build")
        assert s.halted is None and not await s.store.get_meta("halt")
    assert len(policy.asked) == 3
    assert any(isinstance(e, TextDelta) and e.text == "never said" for e in events)
    shadows = [r for r in debug_records(instance) if r["kind"] == "halt"]
    assert [(r["event"], r["rule"], r["shadow"]) for r in shadows] == [
        ("sentinel_halt_shadow", "repeat", True)
    ]


async def test_the_sentinel_is_off_unless_configured(
    instance: InstancePaths, policy: RecordingPolicy
) -> None:
    driver = ScriptedDriver([polling_turn()])
    async with open_session("t1", driver=driver, approver=policy) as s:
        await run(s, "build")
        assert s.halted is None
    assert len(policy.asked) == 3


async def test_no_progress_halts_at_the_end_of_a_turn(
    instance: InstancePaths, policy: RecordingPolicy, configure: Callable[..., Any]
) -> None:
    configure(runtime_sentinel=True, limits={"sentinel": {"no_progress_turns": 2}})

    def look(i: int) -> list[DriverEvent]:
        return [ToolCall(f"l{i}", "Bash", {"command": f"ls {i}"}), ToolResult(f"l{i}", "x"), Done()]

    async def same_tree(cwd: Any) -> str:
        return "tree-1"

    driver = ScriptedDriver([look(i) for i in range(3)])
    async with open_session("t1", driver=driver, approver=policy, git_probe=same_tree) as s:
        first = await run(s, "look")
        second = await run(s, "look again")
        third = await run(s, "and again")
        rows = await s.store.rows()
    assert not any(isinstance(e, Halted) for e in first + second)
    (halted,) = [e for e in third if isinstance(e, Halted)]
    assert halted.record.rule == "no_progress" and halted.record.turn == 3
    assert rows[-1].blocks[-1]["text"].startswith("[SENTINEL HALT] no_progress")


async def test_a_changing_git_tree_is_progress(
    instance: InstancePaths, policy: RecordingPolicy, configure: Callable[..., Any]
) -> None:
    configure(runtime_sentinel=True, limits={"sentinel": {"no_progress_turns": 2}})
    trees = iter(range(100))

    async def moving_tree(cwd: Any) -> str:
        return f"tree-{next(trees)}"

    turn = [ToolCall("l", "Bash", {"command": "make"}), ToolResult("l", "x"), Done()]
    driver = ScriptedDriver([list(turn) for _ in range(4)])
    async with open_session("t1", driver=driver, approver=policy, git_probe=moving_tree) as s:
        for i in range(4):
            await run(s, f"turn {i}")
        assert s.halted is None


def test_halt_meta_is_shown_by_mnemara_show(instance: InstancePaths) -> None:
    from panels.cli.window_view import describe_window
    from runtime.config import load_config

    halt = {"source": "sentinel", "rule": "repeat", "message": "Bash called 3 times", "turn": 4,
            "at": "2026-01-01T00:00:00+00:00"}  # fmt: skip
    spend = {"turns": 4, "requests": 9, "input_tokens": 1200, "output_tokens": 80, "usd": 0.5,
             "limits": {"max_session_usd": 2.0}}  # fmt: skip
    with TurnStore.open(instance.turns) as store:
        store.set_meta("halt", json.dumps(halt))
        store.set_meta("spend", json.dumps(spend))
        text = describe_window(store, load_config(instance.config)).as_text()
    assert (
        "spend this session: 4 turns, 9 requests, 1200 input tokens, 80 output tokens, $0.5000 "
        "(limits: max_session_usd=2.0)"
    ) in text
    assert "halted: [SENTINEL HALT] repeat: Bash called 3 times (turn 4" in text
