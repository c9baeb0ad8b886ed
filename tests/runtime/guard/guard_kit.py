"""Helpers for the guard tests: a recording policy, a turn runner, a git probe that finds none."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from runtime.turn.driver import Decision, ToolCallRequest


class RecordingPolicy:
    """Allows every call and remembers what it was asked."""

    def __init__(self) -> None:
        self.asked: list[ToolCallRequest] = []

    async def decide(self, call: ToolCallRequest) -> Decision:
        self.asked.append(call)
        return Decision(allow=True)


async def run(session: Any, text: str) -> list[Any]:
    return [e async for e in session.turn(text)]


async def no_git(cwd: Path) -> str | None:
    return None
