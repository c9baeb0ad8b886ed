"""What a CLI process calls back into, bound to the turn that uses the process.

The SDK registers a client's callbacks (the PreToolUse hook, `can_use_tool`, the in-process
MCP tools, the stderr sink) once, when it connects, for the life of the CLI. A warm spare
(spare.py) connects before its turn exists, so its callbacks must reach whichever turn later
takes it. `Binding` is that indirection: the options are built with its methods, and
`bind(request)` points them at the turn's approver and tools. Unbound, every tool call is
refused (fail closed) and no tool runs. A fresh turn binds at once, so both paths are one.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from runtime.claude.approval import ApprovalGate
from runtime.turn.driver import ToolOutput, ToolSpec, TurnRequest, call_tool

if TYPE_CHECKING:
    from claude_agent_sdk import (
        HookContext,
        PermissionResultAllow,
        PermissionResultDeny,
        ToolPermissionContext,
    )
    from claude_agent_sdk.types import SyncHookJSONOutput

STDERR_TAIL_LINES = 20
UNBOUND = "Tool call refused: this CLI process has no turn yet."


class Binding:
    """The turn a CLI process serves; see the module docstring."""

    def __init__(self) -> None:
        self.gate: ApprovalGate | None = None
        self.tools: dict[str, ToolSpec] = {}
        self.stderr_tail: deque[str] = deque(maxlen=STDERR_TAIL_LINES)

    def bind(self, request: TurnRequest) -> None:
        """From now on, calls are decided by `request`'s approver and served by its tools."""
        self.gate = ApprovalGate(request.approver)
        self.tools = {spec.name: spec for spec in request.sdk_tools}

    def on_stderr(self, line: str) -> None:
        self.stderr_tail.append(line)

    async def pre_tool_use(
        self, hook_input: Mapping[str, Any], tool_use_id: str | None, context: HookContext
    ) -> SyncHookJSONOutput:
        gate = self.gate
        if gate is None:
            return {
                "hookSpecificOutput": {
                    "hookEventName": "PreToolUse",
                    "permissionDecision": "deny",
                    "permissionDecisionReason": UNBOUND,
                }
            }
        return await gate.pre_tool_use(hook_input, tool_use_id, context)

    async def can_use_tool(
        self, tool_name: str, tool_input: dict[str, Any], context: ToolPermissionContext
    ) -> PermissionResultAllow | PermissionResultDeny:
        gate = self.gate
        if gate is None:
            from claude_agent_sdk import PermissionResultDeny

            return PermissionResultDeny(message=UNBOUND)
        return await gate.can_use_tool(tool_name, tool_input, context)

    async def call(self, name: str, arguments: dict[str, Any]) -> ToolOutput:
        """Run the bound turn's tool `name` (an in-process MCP tool's handler comes here)."""
        spec = self.tools.get(name)
        if spec is None:
            return ToolOutput(f"Tool {name} is not available to this turn.", is_error=True)
        return await call_tool(spec, arguments)
