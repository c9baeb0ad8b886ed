"""PolicyApprover: answers, session grants, remembered rules, headless denial, one ask at a time."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import pytest
from claude_agent_sdk import PermissionResultAllow, ToolPermissionContext

import runtime.policy.approver as approver_module
from runtime.claude.approval import ApprovalGate
from runtime.instance.debuglog import DebugLog
from runtime.policy.approver import (
    Answer,
    HeadlessAsker,
    PolicyApprover,
    prompt_text,
)
from runtime.policy.policy import Verdict
from runtime.turn.driver import ToolCallRequest
from tests.runtime.policy.conftest import Machine

pytestmark = pytest.mark.anyio


class ScriptedAsker:
    """Answers from a list and remembers what it was asked."""

    def __init__(self, *answers: Answer) -> None:
        self.answers = list(answers)
        self.asked: list[tuple[ToolCallRequest, Verdict]] = []

    async def ask(self, call: ToolCallRequest, verdict: Verdict) -> Answer:
        self.asked.append((call, verdict))
        await anyio.lowlevel.checkpoint()  # let a competing call reach the lock meanwhile
        return self.answers.pop(0)


def bash(command: str, call_id: str = "t1") -> ToolCallRequest:
    return ToolCallRequest(tool_use_id=call_id, name="Bash", input={"command": command})


def approver(machine: Machine, asker: object, **kwargs: object) -> PolicyApprover:
    return PolicyApprover(machine.state, machine.ctx, asker, **kwargs)  # type: ignore[arg-type]


async def test_allow_and_deny_never_ask(machine: Machine) -> None:
    asker = ScriptedAsker()
    gate = approver(machine, asker)
    allowed = await gate.decide(bash("git status"))
    denied = await gate.decide(
        ToolCallRequest("t2", "Write", {"file_path": str(machine.instance.permissions)})
    )
    assert allowed.allow and not denied.allow
    assert "permissions.json" in denied.message and "do not retry" in denied.message
    assert asker.asked == []


async def test_headless_denies_with_a_message_the_model_can_read(machine: Machine) -> None:
    decision = await approver(machine, HeadlessAsker()).decide(bash("make build"))
    assert not decision.allow
    assert decision.message.startswith("Bash call not run: it needs the operator's approval")
    assert "Do not retry it unchanged" in decision.message


async def test_yes_allows_once(machine: Machine) -> None:
    asker = ScriptedAsker(Answer.YES, Answer.NO)
    gate = approver(machine, asker)
    assert (await gate.decide(bash("make build", "a"))).allow
    assert not (await gate.decide(bash("make build", "b"))).allow
    assert len(asker.asked) == 2


async def test_the_hook_and_the_prompt_about_one_call_ask_the_operator_once(
    machine: Machine,
) -> None:
    # The live path's two questions are answered by the driver's gate, the one cache.
    asker = ScriptedAsker(Answer.YES)
    gate = ApprovalGate(approver(machine, asker))
    hook = {"tool_name": "Bash", "tool_input": {"command": "make build"}, "tool_use_id": "a"}
    assert await gate.pre_tool_use(hook, "a", {"signal": None}) == {}
    prompt = ToolPermissionContext(tool_use_id="a")
    allowed = await gate.can_use_tool("Bash", {"command": "make build"}, prompt)
    assert isinstance(allowed, PermissionResultAllow)
    assert len(asker.asked) == 1


async def test_the_approver_keeps_no_cache_of_its_own(machine: Machine) -> None:
    asker = ScriptedAsker(Answer.YES, Answer.NO)
    policy = approver(machine, asker)
    assert (await policy.decide(bash("make build", "a"))).allow
    assert not (await policy.decide(bash("make build", "a"))).allow  # asked again: no
    assert len(asker.asked) == 2


async def test_always_persists_the_exact_targets(machine: Machine) -> None:
    asker = ScriptedAsker(Answer.ALWAYS, Answer.NO)
    gate = approver(machine, asker, rules_path=machine.instance.permissions)
    assert (await gate.decide(bash("git status && make build", "a"))).allow
    assert (await gate.decide(bash("make build", "b"))).allow  # remembered: not asked
    assert not (await gate.decide(bash("make build2", "c"))).allow  # not the same target
    saved = json.loads(machine.instance.permissions.read_text())
    assert saved == {"Bash": ["make\\ build"]}  # only the segment no pattern allowed
    assert [c.tool_use_id for c, _ in asker.asked] == ["a", "c"]


async def test_always_on_a_hazard_is_only_yes_once(machine: Machine) -> None:
    asker = ScriptedAsker(Answer.ALWAYS, Answer.NO)
    gate = approver(machine, asker, rules_path=machine.instance.permissions)
    assert (await gate.decide(bash("bash -c id", "a"))).allow
    assert not (await gate.decide(bash("bash -c id", "b"))).allow
    assert not machine.instance.permissions.exists()


async def test_session_allows_the_tool_but_not_hazards(machine: Machine) -> None:
    asker = ScriptedAsker(Answer.SESSION, Answer.NO)
    gate = approver(machine, asker)
    assert (await gate.decide(bash("make build", "a"))).allow
    assert (await gate.decide(bash("rm -rf build", "b"))).allow
    assert not (await gate.decide(bash("X=1 make", "c"))).allow
    assert [c.tool_use_id for c, _ in asker.asked] == ["a", "c"]
    assert "Bash" in gate.state.session_tools


async def test_concurrent_asks_are_serialised_and_rechecked(machine: Machine) -> None:
    asker = ScriptedAsker(Answer.SESSION)
    gate = approver(machine, asker)
    results: dict[str, bool] = {}

    async def run(call_id: str) -> None:
        results[call_id] = (await gate.decide(bash(f"make {call_id}", call_id))).allow

    async with anyio.create_task_group() as tg:
        for call_id in ("a", "b", "c"):
            tg.start_soon(run, call_id)
    assert results == {"a": True, "b": True, "c": True}
    assert len(asker.asked) == 1  # the first answer covered the others


async def test_a_damaged_permissions_file_on_always_allows_once_and_logs(
    machine: Machine, tmp_path: Path
) -> None:
    machine.instance.permissions.write_text("{broken")
    log = DebugLog(tmp_path / "debug.log")
    gate = approver(
        machine, ScriptedAsker(Answer.ALWAYS), rules_path=machine.instance.permissions, log=log
    )
    assert (await gate.decide(bash("make build"))).allow
    assert machine.instance.permissions.read_text() == "{broken"
    events = [json.loads(line)["event"] for line in log.path.read_text().splitlines()]
    assert "permissions_save_failed" in events


def test_prompt_text_escapes_and_offers_always_only_when_possible() -> None:
    rememberable = Verdict("ask", "Bash", "asks", "echo \x1b[2Khi\u200b", ("echo hi",))
    fixed = Verdict("ask", "Bash", "`bash -c` runs code", "bash -c id")
    shown = prompt_text(rememberable)
    assert "\\x1b[2K" in shown and "\\u200b" in shown and "\x1b" not in shown
    assert "[a]lways" in shown
    assert "[a]lways" not in prompt_text(fixed)


async def test_a_100_kb_command_is_refused_as_too_long_to_check(machine: Machine) -> None:
    asker = ScriptedAsker(Answer.NO)
    decision = await approver(machine, asker).decide(bash("echo " + "a " * 50_000))
    assert not decision.allow
    ((_, verdict),) = asker.asked
    assert verdict.action == "ask" and "too long to check" in verdict.reason
    assert verdict.remember == ()


async def test_a_slow_decision_does_not_block_the_event_loop(
    machine: Machine, monkeypatch: pytest.MonkeyPatch
) -> None:
    entered = threading.Event()
    release = threading.Event()
    real_decide = approver_module.decide

    def slow_decide(*args: Any) -> Verdict:
        entered.set()
        # Only set by a task on the event loop: if this ran on the loop, it would wait in vain.
        assert release.wait(timeout=30), "the event loop was blocked during the decision"
        return real_decide(*args)

    monkeypatch.setattr(approver_module, "decide", slow_decide)
    gate = approver(machine, ScriptedAsker())
    results: list[bool] = []

    async def run() -> None:
        results.append((await gate.decide(bash("git status"))).allow)

    async with anyio.create_task_group() as tg:
        tg.start_soon(run)
        await anyio.to_thread.run_sync(entered.wait, 5)
        release.set()
    assert results == [True]
