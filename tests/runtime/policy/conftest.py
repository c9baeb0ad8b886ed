"""A small machine for policy tests: a home with a project, an instance and a team directory."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from runtime.instance.config import InstanceConfig, ToolPolicy
from runtime.instance.home import InstancePaths
from runtime.policy.context import PolicyContext
from runtime.policy.policy import PolicyState


@dataclass(frozen=True)
class Machine:
    home: Path
    project: Path
    outside: Path
    state_root: Path
    instance: InstancePaths
    ctx: PolicyContext
    state: PolicyState


# Patterns an operator might plausibly configure; the bad inputs must get past none of them.
BASH_PATTERNS = ("git status", "git diff( .*)?", "ls( .*)?", "echo .*", "cat .*", "pytest( .*)?")


def build_machine(tmp_path: Path, *, bash_mode: str = "ask") -> Machine:
    home = tmp_path / "home"
    project = home / "project"
    (project / ".git" / "hooks").mkdir(parents=True)
    (project / "src").mkdir()
    (home / ".ssh").mkdir()
    (home / ".ssh" / "id_ed25519").write_text("secret\n")
    (home / ".bashrc").write_text("# rc\n")
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "data.txt").write_text("x\n")
    state_root = home / ".mnemara"
    instance = InstancePaths.for_name("scratch", state_root)
    instance.root.mkdir(parents=True)
    instance.config.write_text("{}\n")
    (state_root / "_teams" / "crew").mkdir(parents=True)
    config = InstanceConfig(
        allowed_tools=(
            ToolPolicy(tool="Bash", mode=bash_mode, allowed_patterns=BASH_PATTERNS),  # type: ignore[arg-type]
            ToolPolicy(tool="Read", mode="allow"),
            ToolPolicy(tool="Write", mode="ask", allowed_patterns=(f"{project}/src/.*",)),
            ToolPolicy(tool="Edit", mode="ask"),
            ToolPolicy(tool="WriteMemory", mode="allow"),
        ),
        mcp_servers=({"name": "fetch", "command": "uvx"},),  # type: ignore[arg-type]
    )
    # PATH as the tools would see it: the machine's own, not the one running the tests.
    sysbin = tmp_path / "sysbin"
    sysbin.mkdir()
    ctx = PolicyContext.build(
        cwd=project,
        home=home,
        instance=instance,
        state_root=state_root,
        home_only=True,
        search_path=f"{sysbin}:relative/bin",
    )
    return Machine(
        home, project, outside, state_root, instance, ctx, PolicyState.from_config(config)
    )


@pytest.fixture
def machine(tmp_path: Path) -> Machine:
    return build_machine(tmp_path)
