"""The permission policy behind the guard: MCP namespaces, unknown tools, our own tools."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from guard_kit import run

from runtime.instance.config import McpServer, ToolPolicy, default_tool_policies
from runtime.instance.home import InstancePaths
from runtime.turn.driver import Done, ToolCall, ToolResult
from runtime.turn.open import open_session
from runtime.turn.scripted import ScriptedDriver

pytestmark = pytest.mark.anyio


def results(events: list[Any]) -> dict[str, ToolResult]:
    return {e.tool_use_id: e for e in events if isinstance(e, ToolResult)}


async def test_an_unknown_mcp_tool_asks_and_headless_means_no(
    instance: InstancePaths, tmp_path: Path
) -> None:
    driver = ScriptedDriver(
        [[ToolCall("m1", "mcp__stranger__do", {"x": 1}), ToolResult("m1", "did it"), Done()]]
    )
    async with open_session("t1", driver=driver, cwd=tmp_path) as s:  # real policy, no asker
        out = results(await run(s, "use the stranger's tool"))
    assert out["m1"].is_error
    assert "needs the operator's approval" in out["m1"].content
    assert "not in the policy; unknown tools are asked about" in out["m1"].content


async def test_a_configured_servers_namespace_is_allowed_and_can_be_narrowed(
    instance: InstancePaths, tmp_path: Path, configure: Callable[..., Any]
) -> None:
    deny_one = ToolPolicy(tool="mcp__echo__shout", mode="deny")
    configure(
        mcp_servers=[McpServer(name="echo", command="echo-server").model_dump()],
        allowed_tools=[p.model_dump() for p in (*default_tool_policies(), deny_one)],
    )
    driver = ScriptedDriver(
        [
            [
                ToolCall("e1", "mcp__echo__echo", {"text": "hi"}),
                ToolResult("e1", "echo: hi"),
                ToolCall("e2", "mcp__echo__shout", {"text": "HI"}),
                ToolResult("e2", "HI!"),
                Done(),
            ]
        ]
    )
    async with open_session("t1", driver=driver, cwd=tmp_path) as s:
        out = results(await run(s, "echo"))
    assert not out["e1"].is_error and out["e1"].content == "echo: hi"
    assert out["e2"].is_error and "mcp__echo__shout is set to deny" in out["e2"].content


async def test_our_own_tools_are_allowed_by_the_default_policy(
    instance: InstancePaths, tmp_path: Path
) -> None:
    driver = ScriptedDriver([[ToolCall("w1", "mcp__mnemara__list_window", {}), Done()]])
    async with open_session("t1", driver=driver, cwd=tmp_path) as s:
        out = results(await run(s, "list"))
    assert not out["w1"].is_error and "rows in the window" in out["w1"].content
