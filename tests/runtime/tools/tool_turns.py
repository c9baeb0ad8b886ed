"""Turn helpers for the tool tests: scripted turns that call our tools, and their results."""

from __future__ import annotations

from typing import Any

from runtime.turn.driver import Done, DriverEvent, TextDelta, ToolCall, ToolResult, Usage


def tool_turn(*calls: tuple[str, dict[str, Any]], text: str = "done") -> list[DriverEvent]:
    """A scripted turn in which the model calls our tools (results come from the handlers)."""
    events: list[DriverEvent] = [
        ToolCall(f"c{i}", f"mcp__mnemara__{name}", args) for i, (name, args) in enumerate(calls)
    ]
    return [*events, TextDelta(text), Usage(10, 5), Done()]


def results(events: list[Any]) -> dict[str, ToolResult]:
    """tool_use_id -> ToolResult of a turn's events."""
    return {e.tool_use_id: e for e in events if isinstance(e, ToolResult)}


async def run(session: Any, text: str) -> list[Any]:
    return [e async for e in session.turn(text)]
