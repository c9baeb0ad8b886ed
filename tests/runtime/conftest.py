"""Fixtures for the runtime tests: a recording approver and turn requests for the drivers."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from runtime.turn.driver import Decision, ToolCallRequest, TurnRequest

BLOCKS: tuple[dict[str, Any], ...] = (
    {"type": "text", "text": "<<window v1>>\nhead"},
    {"type": "text", "text": "turn 1", "cache_control": {"type": "ephemeral"}},
    {"type": "text", "text": "the new task"},
)


class RecordingApprover:
    """Decides by a rule and records every call it was asked about."""

    def __init__(self, rule: Callable[[ToolCallRequest], Decision] | None = None) -> None:
        self.rule = rule or (lambda call: Decision(allow=True))
        self.asked: list[ToolCallRequest] = []

    async def decide(self, call: ToolCallRequest) -> Decision:
        self.asked.append(call)
        return self.rule(call)


@pytest.fixture
def approver() -> RecordingApprover:
    return RecordingApprover()


@pytest.fixture
def make_request(tmp_path: Path, approver: RecordingApprover) -> Callable[..., TurnRequest]:
    def make(**overrides: Any) -> TurnRequest:
        fields: dict[str, Any] = {
            "system": "# ROLE\nYou are a test panel.",
            "blocks": BLOCKS,
            "model": "claude-test",
            "approver": approver,
            "cwd": tmp_path,
        }
        fields.update(overrides)
        return TurnRequest(**fields)

    return make
