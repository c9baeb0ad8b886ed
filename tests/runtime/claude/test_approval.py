"""The approval gate behind the PreToolUse hook and `can_use_tool`: one decision per call."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from claude_agent_sdk import PermissionResultAllow, PermissionResultDeny, ToolPermissionContext

from runtime.claude.approval import ApprovalGate
from runtime.turn.driver import DEFAULT_DENY_MESSAGE, Decision, ToolCallRequest

pytestmark = pytest.mark.anyio


def hook_input(tool_use_id: str, name: str = "Bash", **tool_input: Any) -> dict[str, Any]:
    return {
        "hook_event_name": "PreToolUse",
        "tool_name": name,
        "tool_input": tool_input,
        "tool_use_id": tool_use_id,
    }


def context(tool_use_id: str) -> ToolPermissionContext:
    return ToolPermissionContext(tool_use_id=tool_use_id)


async def test_hook_then_permission_prompt_ask_the_approver_once(approver: Any) -> None:
    gate = ApprovalGate(approver)
    assert await gate.pre_tool_use(hook_input("t1", command="ls"), "t1", {"signal": None}) == {}
    allowed = await gate.can_use_tool("Bash", {"command": "ls"}, context("t1"))
    assert isinstance(allowed, PermissionResultAllow) and allowed.updated_input is None
    await gate.can_use_tool("Bash", {"command": "ls"}, context("t2"))
    assert approver.asked == [
        ToolCallRequest("t1", "Bash", {"command": "ls"}),
        ToolCallRequest("t2", "Bash", {"command": "ls"}),
    ]


async def test_a_refusal_carries_the_approvers_words_or_a_default(approver: Any) -> None:
    approver.rule = lambda call: Decision(allow=False, message=call.input.get("why", ""))
    gate = ApprovalGate(approver)

    hooked = await gate.pre_tool_use(hook_input("t1", why="protected path"), "t1", {"signal": None})
    output = hooked["hookSpecificOutput"]
    assert output["permissionDecision"] == "deny"  # type: ignore[typeddict-item]
    assert output["permissionDecisionReason"] == "protected path"  # type: ignore[typeddict-item]

    denied = await gate.can_use_tool("Bash", {}, context("t2"))
    assert isinstance(denied, PermissionResultDeny) and denied.message == DEFAULT_DENY_MESSAGE
    assert not denied.interrupt  # the model is told and the turn goes on


async def test_a_rewritten_input_is_allowed_explicitly_by_the_hook(approver: Any) -> None:
    approver.rule = lambda call: Decision(allow=True, updated_input={"command": "ls -a"})
    gate = ApprovalGate(approver)
    hooked = await gate.pre_tool_use(hook_input("t1", command="ls"), "t1", {"signal": None})
    assert hooked == {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "allow",
            "updatedInput": {"command": "ls -a"},
        }
    }
    allowed = await gate.can_use_tool("Bash", {"command": "ls"}, context("t1"))
    assert isinstance(allowed, PermissionResultAllow)
    assert allowed.updated_input == {"command": "ls -a"}


async def test_a_failing_approver_refuses(approver: Any) -> None:
    def explode(call: ToolCallRequest) -> Decision:
        raise RuntimeError("policy file unreadable")

    approver.rule = explode
    denied = await ApprovalGate(approver).can_use_tool("Write", {}, context("t1"))
    assert isinstance(denied, PermissionResultDeny) and "policy file unreadable" in denied.message


async def test_overlapping_questions_about_one_call_wait_for_one_answer() -> None:
    release = anyio.Event()
    asked: list[str] = []

    class SlowApprover:
        async def decide(self, call: ToolCallRequest) -> Decision:
            asked.append(call.tool_use_id)
            await release.wait()  # an operator thinking it over
            return Decision(allow=True)

    gate = ApprovalGate(SlowApprover())
    answers: list[object] = []

    async def hook() -> None:
        answers.append(await gate.pre_tool_use(hook_input("t1"), "t1", {"signal": None}))

    async def prompt() -> None:
        answers.append(await gate.can_use_tool("Bash", {}, context("t1")))

    async with anyio.create_task_group() as tg:
        tg.start_soon(hook)
        tg.start_soon(prompt)
        await anyio.wait_all_tasks_blocked()
        release.set()
    assert asked == ["t1"] and len(answers) == 2
