"""Fixtures for the guard tests: an instance whose config a test can change, and approvers.

This directory goes on sys.path so the tests can import `guard_kit` (the helpers); tests are
collected with --import-mode=importlib, which adds nothing to sys.path itself.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from guard_kit import RecordingPolicy

from runtime.config import InstanceConfig, load_config, save_config
from runtime.home import InstancePaths
from runtime.store import TurnStore


@pytest.fixture
def instance(mnemara_home: Path) -> InstancePaths:
    paths = InstancePaths.for_name("t1", mnemara_home)
    paths.root.mkdir()
    paths.role.write_text("ROLE", encoding="utf-8")
    save_config(paths.config, InstanceConfig(role_doc_path=str(paths.role)))
    TurnStore.open(paths.turns).close()
    return paths


@pytest.fixture
def configure(instance: InstancePaths) -> Callable[..., InstanceConfig]:
    def change(**fields: Any) -> InstanceConfig:
        data = load_config(instance.config).model_dump(mode="json")
        data.update(fields)
        config = InstanceConfig.model_validate(data)
        save_config(instance.config, config)
        return config

    return change


@pytest.fixture
def policy() -> RecordingPolicy:
    return RecordingPolicy()
