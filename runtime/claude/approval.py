"""Tool approval on the live path: one decision per tool call, asked of the session's approver.

The CLI offers two places to gate a tool call and neither is enough alone: `can_use_tool` is
never called for commands the CLI itself considers read-only (it auto-approves them), and a
PreToolUse hook that answers "allow" makes the CLI skip its own checks. So both are wired to one
`ApprovalGate`: the hook sees every call first and refuses what the approver refuses; an allowed
call is left to the CLI's own rules ("no opinion"), and whatever the CLI would prompt for comes
to `can_use_tool`, which answers from the same cached decision. The approver is asked at most
once per `tool_use_id`, so an operator is never asked twice about one call.

Measured with CLI 2.1.332: the model reads a hook refusal as "PreToolUse:<tool> hook error:
<our message>", so approver messages should read well after that prefix.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import anyio

from runtime.turn.driver import Approver, Decision, ToolCallRequest, deny_text

if TYPE_CHECKING:
    from claude_agent_sdk import (
        HookContext,
        PermissionResultAllow,
        PermissionResultDeny,
        ToolPermissionContext,
    )
    from claude_agent_sdk.types import SyncHookJSONOutput


class ApprovalGate:
    """Asks the approver once per tool call and serves both the hook and `can_use_tool`."""

    def __init__(self, approver: Approver) -> None:
        self._approver = approver
        self._decisions: dict[str, Decision] = {}
        self._locks: dict[str, anyio.Lock] = {}

    async def decide(
        self, tool_use_id: str | None, name: str, tool_input: dict[str, Any]
    ) -> Decision:
        if not tool_use_id:
            return await self._ask(ToolCallRequest("", name, dict(tool_input)))
        # The hook and can_use_tool for one call can overlap; the lock makes the second wait for
        # the first decision instead of asking again.
        lock = self._locks.setdefault(tool_use_id, anyio.Lock())
        async with lock:
            decision = self._decisions.get(tool_use_id)
            if decision is None:
                decision = await self._ask(ToolCallRequest(tool_use_id, name, dict(tool_input)))
                self._decisions[tool_use_id] = decision
            return decision

    async def _ask(self, call: ToolCallRequest) -> Decision:
        try:
            return await self._approver.decide(call)
        except Exception as exc:  # fail closed: a broken approver never lets a call through
            return Decision(
                allow=False,
                message=f"Tool call refused: the approver failed ({type(exc).__name__}: {exc}).",
            )

    async def pre_tool_use(
        self, hook_input: Mapping[str, Any], tool_use_id: str | None, context: HookContext
    ) -> SyncHookJSONOutput:
        """The PreToolUse hook: refuse what the approver refuses, rewrite what it rewrites."""
        name = str(hook_input.get("tool_name", ""))
        raw_input = hook_input.get("tool_input")
        tool_input: dict[str, Any] = dict(raw_input) if isinstance(raw_input, Mapping) else {}
        decision = await self.decide(tool_use_id or hook_input.get("tool_use_id"), name, tool_input)
        if not decision.allow:
            return {
                "hookSpecificOutput": {
                    "hookEventName": "PreToolUse",
                    "permissionDecision": "deny",
                    "permissionDecisionReason": deny_text(decision),
                }
            }
        if decision.updated_input is not None:
            # A rewritten input must reach the tool even when the CLI would auto-approve the
            # call and never ask can_use_tool; the approver has approved exactly this input.
            return {
                "hookSpecificOutput": {
                    "hookEventName": "PreToolUse",
                    "permissionDecision": "allow",
                    "updatedInput": decision.updated_input,
                }
            }
        return {}

    async def can_use_tool(
        self, tool_name: str, tool_input: dict[str, Any], context: ToolPermissionContext
    ) -> PermissionResultAllow | PermissionResultDeny:
        """The CLI's permission prompt, answered from the same decision as the hook."""
        from claude_agent_sdk import PermissionResultAllow, PermissionResultDeny

        decision = await self.decide(context.tool_use_id, tool_name, tool_input)
        if decision.allow:
            return PermissionResultAllow(updated_input=decision.updated_input)
        return PermissionResultDeny(message=deny_text(decision))
