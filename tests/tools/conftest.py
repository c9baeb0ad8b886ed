"""Fixtures for the agent's tools: an instance, an allow-all policy.

This directory goes on sys.path so the tests can import `tool_turns` (the turn helpers);
tests are collected with --import-mode=importlib, which adds nothing to sys.path itself.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from runtime.config import InstanceConfig, load_config, save_config
from runtime.driver import Decision, ToolCallRequest
from runtime.home import InstancePaths
from runtime.store import TurnStore


class AllowAll:
    def __init__(self) -> None:
        self.asked: list[ToolCallRequest] = []

    async def decide(self, call: ToolCallRequest) -> Decision:
        self.asked.append(call)
        return Decision(allow=True)


@pytest.fixture
def instance(mnemara_home: Path) -> InstancePaths:
    paths = InstancePaths.for_name("t1", mnemara_home)
    paths.root.mkdir()
    paths.role.write_text("ROLE v1", encoding="utf-8")
    save_config(paths.config, InstanceConfig(role_doc_path=str(paths.role)))
    TurnStore.open(paths.turns).close()
    return paths


@pytest.fixture
def configure(instance: InstancePaths) -> Callable[..., InstanceConfig]:
    def change(**fields: Any) -> InstanceConfig:
        config = load_config(instance.config).model_copy(update=fields)
        save_config(instance.config, config)
        return config

    return change


@pytest.fixture
def approver() -> AllowAll:
    return AllowAll()
