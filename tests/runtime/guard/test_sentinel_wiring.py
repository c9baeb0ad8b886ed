"""The runtime sentinel on a session's live path: a polling loop is stopped before its third
call runs, the turn ends with the notice, a halt record is written, and resume() clears it.

The regressions run against a real git repository in tmp_path, with the world measured by the
real probe: the tools' effects are applied for real (`sed -i` in a subprocess, the bytes of a
Write, an Edit) by `Executing`, the policy, just before each tool would run.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pytest
from guard_kit import RecordingPolicy, no_git, run

from runtime.errors import PanelHaltedError
from runtime.guard.halts import Halted
from runtime.instance.home import InstancePaths
from runtime.store import TurnStore
from runtime.turn.driver import (
    Decision,
    Done,
    DriverEvent,
    TextDelta,
    ToolCall,
    ToolCallRequest,
    ToolOutput,
    ToolResult,
    ToolSpec,
    Usage,
)
from runtime.turn.open import open_session
from runtime.turn.scripted import ScriptedDriver

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


class Executing(RecordingPolicy):
    """Allows every call and applies its effect on disk, as the tool is about to: runs a Bash
    command for real, writes a Write's bytes, makes an Edit (when its old string is there)."""

    def __init__(self, cwd: Path) -> None:
        super().__init__()
        self.cwd = cwd

    async def decide(self, call: ToolCallRequest) -> Decision:
        await super().decide(call)
        if call.name == "Bash":
            command = ["bash", "-c", call.input["command"]]
            await anyio.run_process(command, cwd=self.cwd, check=False)
        else:
            await anyio.to_thread.run_sync(write_as_the_tool_would, call)
        return Decision(allow=True)


def write_as_the_tool_would(call: ToolCallRequest) -> None:
    args = call.input
    if call.name == "Write":
        Path(args["file_path"]).write_text(args["content"], encoding="utf-8")
    elif call.name == "Edit":
        path = Path(args["file_path"])
        text = path.read_text(encoding="utf-8")
        if args["old_string"] in text:
            path.write_text(text.replace(args["old_string"], args["new_string"], 1), "utf-8")


@pytest.fixture
async def repo(tmp_path: Path) -> Path:
    path = tmp_path / "repo"
    (path / "src").mkdir(parents=True)
    for i in range(3):
        (path / "src" / f"f{i}.py").write_text("value = 'a'\n", encoding="utf-8")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    await anyio.run_process([*git, "init", "-q"], cwd=path)
    await anyio.run_process([*git, "add", "-A"], cwd=path)
    await anyio.run_process([*git, "commit", "-q", "-m", "init"], cwd=path)
    return path


def call_and_result(ident: str, name: str, args: dict[str, Any], out: str = "ok", *,
                    error: bool = False) -> list[DriverEvent]:  # fmt: skip
    return [ToolCall(ident, name, args), ToolResult(ident, out, is_error=error)]


async def test_a_repeat_after_each_edit_is_progress_not_a_loop(
    instance: InstancePaths, repo: Path, sentinel_on: None
) -> None:
    status = {"command": "git status"}
    events: list[DriverEvent] = []
    for i in range(3):
        events += call_and_result(f"s{i}", "Bash", dict(status), "modified: ...")
        edit = {"file_path": str(repo / "src" / f"f{i}.py"), "old_string": "'a'",
                "new_string": "'b'"}  # fmt: skip
        events += call_and_result(f"e{i}", "Edit", edit, "edited")
    policy = Executing(repo)
    driver = ScriptedDriver([[*events, TextDelta("all edited"), Done()]])
    async with open_session("t1", driver=driver, approver=policy, cwd=repo) as s:
        out = await run(s, "edit the three files")
        assert s.halted is None
    assert len(policy.asked) == 6
    assert not any(isinstance(e, Halted) for e in out)


async def halting_call(
    repo: Path, events: list[DriverEvent]
) -> tuple[str | None, str | None, list[str]]:
    """Run one scripted turn in `repo`; (the refused call, its rule, the calls that ran)."""
    policy = Executing(repo)
    driver = ScriptedDriver([[*events, Done()]])
    async with open_session("t1", driver=driver, approver=policy, cwd=repo) as s:
        out = await run(s, "go")
    halted = [e for e in out if isinstance(e, Halted)]
    refused = next((e.tool_use_id for e in out if isinstance(e, ToolResult) and
                    e.content.startswith("[SENTINEL HALT]")), None)  # fmt: skip
    rule = halted[0].record.rule if halted else None
    return refused, rule, [c.tool_use_id for c in policy.asked]


FAILURE = "FAILED tests/test_f.py::test_value - AssertionError: assert 'a' == 'c'\n1 failed in {}s"


async def test_a_change_made_through_bash_lets_the_failing_command_run_again(
    repo: Path, sentinel_on: None
) -> None:
    events: list[DriverEvent] = []
    for i, fix in enumerate(["sed -i s/=.*/=1/ src/f0.py", "sed -i s/=1/=2/ src/f0.py"]):
        events += call_and_result(f"t{i}", "Bash", {"command": "pytest -q"},
                                  FAILURE.format(0.1 + i), error=True)  # fmt: skip
        events += call_and_result(f"s{i}", "Bash", {"command": fix}, "")
    events += call_and_result("t9", "Bash", {"command": "pytest -q"}, FAILURE.format(0.3),
                              error=True)  # fmt: skip
    refused, _, ran = await halting_call(repo, events)
    assert refused is None and ran == ["t0", "s0", "t1", "s1", "t9"]
    assert (repo / "src" / "f0.py").read_text(encoding="utf-8") == "value =2\n"


async def test_an_identical_rewrite_is_not_progress(repo: Path, sentinel_on: None) -> None:
    same = {"file_path": str(repo / "src" / "f1.py"), "content": "value = 'a'\n"}
    events: list[DriverEvent] = []
    for i in range(3):
        events += call_and_result(f"w{i}", "Write", dict(same), "written")
    refused, rule, ran = await halting_call(repo, events)
    assert (refused, rule, ran) == ("w2", "repeat", ["w0", "w1"])


async def test_edits_retried_with_corrected_indentation_are_not_a_loop(
    repo: Path, sentinel_on: None
) -> None:
    path = str(repo / "src" / "f2.py")
    events: list[DriverEvent] = []
    for i, indent in enumerate(["  ", "\t", "   ", "    "]):
        edit = {"file_path": path, "old_string": f"if x:\n{indent}value = 'a'",
                "new_string": f"if x:\n{indent}value = 'b'"}  # fmt: skip
        events += call_and_result(f"e{i}", "Edit", edit, "String to replace not found in file.",
                                  error=True)  # fmt: skip
    refused, _, ran = await halting_call(repo, events)
    assert refused is None and len(ran) == 4


async def test_the_same_failure_with_its_flags_reordered_is_stopped(
    repo: Path, sentinel_on: None
) -> None:
    events: list[DriverEvent] = []
    for i, flags in enumerate(["-x -q", "-q -x", "-x -q"]):
        events += call_and_result(f"t{i}", "Bash", {"command": f"pytest {flags} tests/"},
                                  FAILURE.format(0.2 + i), error=True)  # fmt: skip
    refused, rule, ran = await halting_call(repo, events)
    assert (refused, rule, ran) == ("t2", "repeat", ["t0", "t1"])


async def test_a_cycle_of_three_calls_is_stopped_on_its_second_round(
    repo: Path, sentinel_on: None
) -> None:
    cycle = [("Read", {"file_path": str(repo / "src" / "f0.py")}),
             ("Bash", {"command": "git diff"}), ("Grep", {"pattern": "value"})]  # fmt: skip
    events: list[DriverEvent] = []
    for i, (name, args) in enumerate(cycle * 3):
        events += call_and_result(f"c{i}", name, dict(args), "same")
    refused, rule, ran = await halting_call(repo, events)
    assert (refused, rule, len(ran)) == ("c5", "alternation", 5)


async def test_turns_that_only_rewrite_notes_are_no_progress(
    instance: InstancePaths, policy: RecordingPolicy, repo: Path, configure: Callable[..., Any]
) -> None:
    configure(runtime_sentinel=True, limits={"sentinel": {"no_progress_turns": 2}})

    def note(i: int) -> list[DriverEvent]:
        args = {"label": "status", "role": "user", "content": f"waiting ({i})", "position": 0}
        return [ToolCall(f"n{i}", "mcp__mnemara__upsert_slot", args), Done()]

    driver = ScriptedDriver([note(i) for i in range(3)])
    async with open_session("t1", driver=driver, approver=policy, cwd=repo) as s:
        turns = [await run(s, f"turn {i}") for i in range(3)]
        slot = [x.content for x in await s.store.slots()]
    assert slot == ["waiting (2)"]  # the note really changed each turn
    assert [any(isinstance(e, Halted) for e in t) for t in turns] == [False, False, True]


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


async def test_the_sentinel_is_on_for_a_new_instance_and_can_be_switched_off(
    instance: InstancePaths, policy: RecordingPolicy, configure: Callable[..., Any]
) -> None:
    async with open_session("t1", driver=ScriptedDriver([polling_turn()]), approver=policy,
                            git_probe=no_git) as s:  # fmt: skip
        await run(s, "build")
        assert s.halted is not None and s.halted.rule == "repeat"
    configure(runtime_sentinel=False)
    off = RecordingPolicy()
    async with open_session("t1", driver=ScriptedDriver([polling_turn()]), approver=off) as s:
        await run(s, "build")
        assert s.halted is None
    assert len(off.asked) == 3


async def test_no_progress_halts_at_the_end_of_a_turn(
    instance: InstancePaths, policy: RecordingPolicy, configure: Callable[..., Any]
) -> None:
    configure(runtime_sentinel=True, limits={"sentinel": {"no_progress_turns": 2}})

    def look(i: int) -> list[DriverEvent]:
        # The same look each turn, the same answer: nothing changes, nothing is learnt.
        return [ToolCall(f"l{i}", "Bash", {"command": "ls"}), ToolResult(f"l{i}", "x"), Done()]

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
    from runtime.instance.config import load_config
    from runtime.window.inspect import describe_window

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


async def test_a_guard_kept_across_sessions_logs_each_halt_once(
    instance: InstancePaths, policy: RecordingPolicy, sentinel_on: None
) -> None:
    """A host keeps one guard across a panel's lives: a closed session must stop listening
    to it, or every earlier life would write each halt to debug.log again."""
    from runtime.guard.guard import Guard, GuardSettings

    guard = Guard(policy, GuardSettings())
    for _ in range(2):  # an earlier life, closed without a halt
        async with open_session("t1", driver=ScriptedDriver([]), approver=policy, guard=guard):
            pass
    driver = ScriptedDriver([polling_turn()])
    async with open_session(
        "t1", driver=driver, approver=policy, git_probe=no_git, guard=guard
    ) as s:
        await run(s, "run the build")
    assert guard.on_record == []
    assert [r["event"] for r in debug_records(instance) if r["kind"] == "halt"] == ["sentinel_halt"]
