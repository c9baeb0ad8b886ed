"""Shared fixtures: async tests run on trio and asyncio; state always lives under tmp_path."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from runtime.instance.config import InstanceConfig, load_config, save_config
from runtime.instance.home import InstancePaths
from runtime.store import TurnStore
from runtime.turn.driver import Decision, ToolCallRequest
from tests.pgcluster import pg_cluster, pg_url  # noqa: F401 (the PostgreSQL fixtures, for any test)


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(autouse=True)
def mnemara_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test gets its own MNEMARA_HOME; nothing touches the real ~/.mnemara."""
    home = tmp_path / "mnemara-home"
    home.mkdir()
    monkeypatch.setenv("MNEMARA_HOME", str(home))
    # No desktop: a host's alerts (panels/host/alerts/) never pop a notification from a test.
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    return home


@pytest.fixture
def instance(mnemara_home: Path) -> InstancePaths:
    """A fresh instance `t1` with a role doc ("ROLE v1") and an empty store."""
    paths = InstancePaths.for_name("t1", mnemara_home)
    paths.root.mkdir()
    paths.role.write_text("ROLE v1", encoding="utf-8")
    save_config(paths.config, InstanceConfig(role_doc_path=str(paths.role)))
    TurnStore.open(paths.turns).close()
    return paths


@pytest.fixture
def configure(instance: InstancePaths) -> Callable[..., InstanceConfig]:
    """Change fields of the instance's config.json (validated, as a user's edit would be)."""

    def change(**fields: Any) -> InstanceConfig:
        data = load_config(instance.config).model_dump(mode="json")
        data.update(fields)
        config = InstanceConfig.model_validate(data)
        save_config(instance.config, config)
        return config

    return change


class AllowAll:
    """An approver that allows every call and remembers what it was asked."""

    def __init__(self) -> None:
        self.asked: list[ToolCallRequest] = []

    async def decide(self, call: ToolCallRequest) -> Decision:
        self.asked.append(call)
        return Decision(allow=True)


@pytest.fixture
def approver() -> AllowAll:
    return AllowAll()


def _cli_children() -> list[str]:
    me, found = str(os.getpid()), []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if stat.rsplit(")", 1)[1].split()[1] == me and "claude" in cmdline:
            found.append(cmdline)
    return found


@pytest.fixture
def cli_children() -> Callable[[], list[str]]:
    """The command lines of this process's children that are Claude Code CLIs (/proc)."""
    return _cli_children


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Slow tests first, then the end-to-end ones, then the rest, each group in file order.

    Under xdist (`make test`) tests go out in this order to whichever worker is free, so the
    long ones start at once and the many short ones fill the gaps, instead of one long test
    starting last and keeping the run waiting on a single worker.
    """

    def group(item: pytest.Item) -> int:
        return 0 if item.get_closest_marker("slow") else 1 if item.get_closest_marker("e2e") else 2

    items.sort(key=group)  # stable: file order within each group


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Say it loudly, at the end of the run, when the PostgreSQL bus suite did not run."""
    skipped = terminalreporter.stats.get("skipped", [])
    count = sum(1 for report in skipped if "PostgreSQL bus suite" in str(report.longrepr))
    if count:
        bar = "!" * 78
        terminalreporter.write_line(bar, red=True, bold=True)
        terminalreporter.write_line(
            f"PostgreSQL is not installed: {count} test(s) of the PostgreSQL bus were SKIPPED "
            "(apt-get install postgresql)",
            red=True,
            bold=True,
        )
        terminalreporter.write_line(bar, red=True, bold=True)
