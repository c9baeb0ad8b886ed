"""Writes: the host's stores and the policy's files are denied in every form; `=PATH` counts."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from runtime.guard.policy import build_policy as build_approver
from runtime.instance.config import InstanceConfig, ToolPolicy
from runtime.instance.home import InstancePaths
from runtime.policy.context import PolicyContext, real
from runtime.policy.policy import PolicyState, decide
from runtime.policy.stores import DATABASE_SIBLINGS
from tests.runtime.policy.conftest import Machine

WRITERS = (
    "cp", "mv", "tee", "sed", "dd", "install", "ln", "rm", "truncate", "sqlite3", "sort", "gcc",
    "something", "cat", "ls", "chmod",
)  # fmt: skip


@pytest.fixture
def admitting() -> PolicyState:
    """A user who allowed each of these programs with any arguments."""
    patterns = tuple(f"{program}( .*)?" for program in WRITERS)
    config = InstanceConfig(
        allowed_tools=(
            ToolPolicy(tool="Bash", mode="ask", allowed_patterns=patterns),
            ToolPolicy(tool="Write", mode="allow"),
            ToolPolicy(tool="Edit", mode="allow"),
        )
    )
    return PolicyState.from_config(config)


BUS = "~/.mnemara/_teams/crew/bus.sqlite"
HOST = "~/.mnemara/_teams/crew/host.sqlite"
OTHER = "~/.mnemara/other"


@pytest.mark.parametrize("sibling", DATABASE_SIBLINGS)
@pytest.mark.parametrize("database", [BUS, HOST, f"{OTHER}/turns.sqlite"])
@pytest.mark.parametrize("tool", ["Write", "Edit"])
def test_file_tools_may_not_write_a_database_or_its_siblings(
    machine: Machine, admitting: PolicyState, tool: str, database: str, sibling: str
) -> None:
    verdict = decide(admitting, tool, {"file_path": database + sibling}, machine.ctx)
    assert verdict.action == "deny", verdict.reason
    assert "no tool may change it" in verdict.reason


@pytest.mark.parametrize(
    ("tool", "key", "path"),
    [
        ("MultiEdit", "file_path", f"{OTHER}/config.json"),
        ("NotebookEdit", "notebook_path", f"{OTHER}/permissions.json"),
        ("Write", "file_path", f"{OTHER}/.permissions.json.tmp1234"),
        ("Write", "file_path", f"{OTHER}/config.json.lock"),
        ("Write", "file_path", "~/.mnemara/scratch/turns.sqlite"),  # this instance's own window
        ("Write", "file_path", f"{OTHER}/Turns.SQLite-WAL"),  # names compare case-insensitively
    ],
)
def test_file_tools_may_not_write_an_instance_store(
    machine: Machine, admitting: PolicyState, tool: str, key: str, path: str
) -> None:
    verdict = decide(admitting, tool, {key: path}, machine.ctx)
    assert verdict.action == "deny", verdict.reason


WRITE_COMMANDS = [
    f"echo x > {HOST}-wal",
    f"echo x >> {OTHER}/turns.sqlite",
    f"cp x {BUS}",
    "cp bus.sqlite ~/.mnemara/_teams/crew/",  # lands as crew/bus.sqlite
    f"cp config.json --target-directory={OTHER}",
    f"cp -t {OTHER} permissions.json",
    f"mv x {OTHER}/turns.sqlite",
    f"tee -a {OTHER}/config.json",
    f"sed -i s/a/b/ {OTHER}/config.json",
    f"sed -ni.bak p {OTHER}/permissions.json",
    f"dd if=x of={OTHER}/turns.sqlite",
    f"install -m 600 x {OTHER}/permissions.json",
    f"ln -sf /tmp/evil {OTHER}/turns.sqlite",
    f"rm {BUS}-wal",
    f"truncate -s 0 {OTHER}/turns.sqlite",
    f"chmod 666 {BUS}",
    f"something --output={BUS}",
    f"gcc -o{OTHER}/turns.sqlite x.c",
    f"sqlite3 {BUS} 'INSERT INTO returns VALUES (1)'",
    f"sqlite3 -readonly {BUS} .tables",
    "cd ~/.mnemara/_teams/crew && sqlite3 bus.sqlite .tables",
    "rm -rf ~/.mnemara",
    "rm -rf ~/.mnemara/_teams/crew",
    f"mv {OTHER} /tmp/x",
    "rm -rf ~",
]


@pytest.mark.parametrize("command", WRITE_COMMANDS)
def test_every_write_form_onto_a_store_is_denied(
    machine: Machine, admitting: PolicyState, command: str
) -> None:
    verdict = decide(admitting, "Bash", {"command": command}, machine.ctx)
    assert verdict.action == "deny", verdict.reason
    assert verdict.remember == ()


@pytest.mark.parametrize(
    "make",
    [
        lambda p: f"cp x {p}",
        lambda p: f"mv x {p}",
        lambda p: f"tee {p}",
        lambda p: f"sed -i s/a/b/ {p}",
        lambda p: f"dd if=x of={p}",
        lambda p: f"something --out={p}",
        lambda p: f"cp permissions.json --target-directory={Path(p).parent}",
        lambda p: f"cp permissions.json {Path(p).parent}/",
    ],
)
def test_every_write_form_onto_the_policy_file_is_denied(
    machine: Machine, admitting: PolicyState, make: Callable[[str], str]
) -> None:
    command = make(str(machine.instance.permissions))
    verdict = decide(admitting, "Bash", {"command": command}, machine.ctx)
    assert verdict.action == "deny", verdict.reason
    assert "permission policy's own file" in verdict.reason


@pytest.mark.parametrize(
    ("tool", "tool_input", "expect"),
    [
        ("Read", {"file_path": BUS}, "allow"),
        ("Grep", {"pattern": "x", "path": OTHER}, "allow"),
        ("Bash", {"command": f"cat {BUS}"}, "ask"),
        ("Bash", {"command": f"cp {BUS} backup.sqlite"}, "ask"),
        ("Bash", {"command": f"ls -la {OTHER}"}, "ask"),
        ("Bash", {"command": f"cat < {OTHER}/config.json"}, "allow"),
    ],
)
def test_reading_the_stores_is_as_before(
    machine: Machine, admitting: PolicyState, tool: str, tool_input: dict[str, str], expect: str
) -> None:
    verdict = decide(admitting, tool, tool_input, machine.ctx)
    assert verdict.action == expect, verdict.reason


def test_a_foreign_bus_and_its_siblings_are_denied(machine: Machine) -> None:
    foreign = machine.home / "shared" / "returns.db"
    ctx = PolicyContext.build(
        cwd=machine.project, home=machine.home, denied_writes=[foreign], state_root=None
    )
    for sibling in DATABASE_SIBLINGS:
        verdict = decide(machine.state, "Write", {"file_path": f"{foreign}{sibling}"}, ctx)
        assert verdict.action == "deny", (sibling, verdict.reason)
    shell = decide(machine.state, "Bash", {"command": f"sqlite3 {foreign} .tables"}, ctx)
    assert shell.action == "deny"
    neighbour = decide(machine.state, "Write", {"file_path": str(foreign.with_name("x.db"))}, ctx)
    assert neighbour.action == "ask"
    read = decide(machine.state, "Read", {"file_path": str(foreign)}, ctx)
    assert read.action == "allow"


def test_build_approver_passes_the_team_files(instance: InstancePaths, tmp_path: Path) -> None:
    foreign = tmp_path / "shared" / "returns.sqlite"
    gate = build_approver(
        instance, InstanceConfig(), cwd=tmp_path, home=tmp_path, team_files=[foreign]
    )
    assert gate.context.denied_writes == (real(foreign),)
    verdict = decide(gate.state, "Write", {"file_path": f"{foreign}-wal"}, gate.context)
    assert verdict.action == "deny"


# A protected path after `=`, or attached to an option, is judged like the path itself.
EQUALS = [
    ("sort -o ~/.bashrc x", "ask"),
    ("sort -o~/.bashrc x", "ask"),
    ("sort --output=~/.bashrc x", "ask"),
    ("cp a --target-directory=~/.ssh", "ask"),
    ("dd if=x of=~/.bashrc", "ask"),
    ("dd if=x of=~/.mnemara/_teams/crew/notes", "ask"),
    ("something --out=.git/hooks/pre-commit", "ask"),
    ("gcc -o.git/hooks/pre-commit x.c", "ask"),
    ("ls --color=~/.ssh/id_ed25519", "ask"),
    ("cat --x=/proc/self/environ", "ask"),
    ("dd if=src/a of=src/b", "allow"),
    ("sort -o src/out.txt src/in.txt", "allow"),
    ("gcc -O2 -Wall -o build/app src/app.c", "allow"),
]


@pytest.mark.parametrize(("command", "expect"), EQUALS, ids=[c for c, _ in EQUALS])
def test_a_path_after_an_equals_sign_or_option_is_checked(
    machine: Machine, admitting: PolicyState, command: str, expect: str
) -> None:
    verdict = decide(admitting, "Bash", {"command": command}, machine.ctx)
    assert verdict.action == expect, verdict.reason


def test_something_out_equals_the_instance_permissions_is_denied(
    machine: Machine, admitting: PolicyState
) -> None:
    command = f"something --out={machine.instance.permissions}"
    verdict = decide(admitting, "Bash", {"command": command}, machine.ctx)
    assert verdict.action == "deny"


def test_mcp_tools_naming_a_store_ask(machine: Machine) -> None:
    verdict = decide(machine.state, "mcp__fetch__fetch", {"db": BUS}, machine.ctx)
    assert verdict.action == "ask" and verdict.remember == ()
    assert "bus or host database" in verdict.reason


def test_a_symlink_to_a_store_is_the_store(machine: Machine, admitting: PolicyState) -> None:
    bus = machine.state_root / "_teams" / "crew" / "bus.sqlite"
    bus.write_text("")
    (machine.project / "src" / "notes.db").symlink_to(bus)
    write = decide(admitting, "Write", {"file_path": "src/notes.db"}, machine.ctx)
    shell = decide(admitting, "Bash", {"command": "cp x src/notes.db"}, machine.ctx)
    assert (write.action, shell.action) == ("deny", "deny")


def test_a_solo_hosts_databases_under_the_state_root_are_denied(
    machine: Machine, admitting: PolicyState
) -> None:
    """A solo instance keeps its bus and host database in `<instance>/host/`, not `_teams`."""
    for name in ("bus.sqlite", "host.sqlite-wal"):
        verdict = decide(admitting, "Write", {"file_path": f"{OTHER}/host/{name}"}, machine.ctx)
        assert verdict.action == "deny", verdict.reason
    # Outside mnemara's state a file of that name may be anyone's: writing it asks.
    assert decide(admitting, "Write", {"file_path": "~/x/bus.sqlite"}, machine.ctx).action == "ask"


def test_a_team_file_without_a_suffix_guards_only_its_own_saves(machine: Machine) -> None:
    team = machine.project / "crew"
    ctx = PolicyContext.build(cwd=machine.project, home=machine.home, team_file=team)
    write = PolicyState.from_config(
        InstanceConfig(allowed_tools=(ToolPolicy(tool="Write", mode="allow"),))
    )
    cases = [("crew", "deny"), ("crew.bak", "deny"), (".crew.tmp1", "deny"), ("crew~", "deny"),
             ("crewmate.py", "allow"), ("crew-notes", "allow")]  # fmt: skip
    for name, expect in cases:
        verdict = decide(write, "Write", {"file_path": str(machine.project / name)}, ctx)
        assert verdict.action == expect, (name, verdict.reason)


def test_build_approver_guards_the_team_file_peer_db_and_path(
    instance: InstancePaths, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the live wiring passes: the team file, the config's own foreign bus, and PATH
    as this process has it (~/.local/bin always)."""
    bindir = tmp_path / "opt" / "bin"
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}relative")
    team_file = tmp_path / "work" / "team.toml"
    peer = tmp_path / "shared" / "returns.db"
    config = InstanceConfig(peer_db_path=str(peer))
    gate = build_approver(instance, config, cwd=tmp_path, home=tmp_path, team_file=team_file)
    everything = PolicyState.from_config(
        InstanceConfig(allowed_tools=(ToolPolicy(tool="Bash", mode="allow"),))
    )
    for target in (team_file, peer, f"{peer}-wal", bindir / "git", tmp_path / ".local/bin/ls"):
        verdict = decide(everything, "Bash", {"command": f"cp x {target}"}, gate.context)
        assert verdict.action == "deny", (target, verdict.reason)
    assert real(tmp_path / "relative") not in gate.context.exec_dirs
