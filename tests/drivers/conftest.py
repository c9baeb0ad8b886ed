"""Fixtures for the driver tests: a recording approver, turn requests, and a child-process probe.

This directory goes on sys.path so the test modules can import `fake_cli` (tests are
collected with --import-mode=importlib, which adds nothing to sys.path itself).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from runtime.driver import Decision, ToolCallRequest, TurnRequest

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
