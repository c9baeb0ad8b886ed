"""Shared fixtures: async tests run on trio and asyncio; state always lives under tmp_path."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(autouse=True)
def mnemara_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test gets its own MNEMARA_HOME; nothing touches the real ~/.mnemara."""
    home = tmp_path / "mnemara-home"
    home.mkdir()
    monkeypatch.setenv("MNEMARA_HOME", str(home))
    return home
