"""Fixtures for session tests: a fresh instance with a role doc, and an allow-all approver."""

from __future__ import annotations

from pathlib import Path

import pytest

from runtime.config import InstanceConfig, save_config
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
def approver() -> AllowAll:
    return AllowAll()
