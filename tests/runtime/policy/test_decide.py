"""What the policy lets through, and how modes, defaults and remembered rules combine."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from runtime.errors import PolicyError
from runtime.instance.config import InstanceConfig, ToolPolicy
from runtime.policy.approver import prompt_text
from runtime.policy.patterns import compile_pattern, exact_pattern
from runtime.policy.policy import PolicyState, decide, mcp_server_of
from runtime.policy.rules import RuleSet
from tests.runtime.policy.conftest import Machine


@pytest.mark.parametrize(
    "command",
    [
        "git status",
        "git status && git diff --stat",
        "ls -la src; git status",
        "ls src | cat -n",
        "git diff 2>&1",
        "echo done > /dev/null",
        "ls *.py",
        "cat 'notes with spaces.txt'",
        "pytest -q tests\n",
    ],
)
def test_plain_commands_matching_patterns_are_allowed(machine: Machine, command: str) -> None:
    verdict = decide(machine.state, "Bash", {"command": command}, machine.ctx)
    assert verdict.action == "allow", verdict.reason


def test_patterns_match_the_whole_segment(machine: Machine) -> None:
    verdict = decide(machine.state, "Bash", {"command": "git status --porcelain"}, machine.ctx)
    assert verdict.action == "ask"
    assert verdict.remember == ("git status --porcelain",)


def test_a_remembered_exact_rule_allows_exactly_that_target(machine: Machine) -> None:
    rule = compile_pattern(exact_pattern("make test"))
    state = machine.state.with_remembered(RuleSet({"Bash": (rule,)}))
    assert decide(state, "Bash", {"command": "make test"}, machine.ctx).action == "allow"
    assert decide(state, "Bash", {"command": "make  test"}, machine.ctx).action == "allow"
    assert decide(state, "Bash", {"command": "make test2"}, machine.ctx).action == "ask"
    assert decide(state, "Bash", {"command": "make test; id"}, machine.ctx).action == "ask"


def test_canonical_quoting_keeps_quoted_and_glob_words_apart(machine: Machine) -> None:
    rule = compile_pattern(exact_pattern("rm '*.tmp'"))
    state = machine.state.with_remembered(RuleSet({"Bash": (rule,)}))
    assert decide(state, "Bash", {"command": "rm '*.tmp'"}, machine.ctx).action == "allow"
    assert decide(state, "Bash", {"command": "rm *.tmp"}, machine.ctx).action == "ask"


def test_file_tools(machine: Machine) -> None:
    src = machine.project / "src" / "app.py"
    read = decide(machine.state, "Read", {"file_path": str(src)}, machine.ctx)
    write = decide(machine.state, "Write", {"file_path": "src/app.py"}, machine.ctx)
    other = decide(machine.state, "Write", {"file_path": "README.md"}, machine.ctx)
    assert (read.action, write.action, other.action) == ("allow", "allow", "ask")
    assert other.remember == (str(machine.project / "README.md"),)


def test_families_follow_their_tool(machine: Machine) -> None:
    grep = decide(machine.state, "Grep", {"pattern": "x"}, machine.ctx)
    multi = decide(machine.state, "MultiEdit", {"file_path": "src/a.py"}, machine.ctx)
    assert grep.action == "allow"  # Read is allow
    assert multi.action == "ask"  # Edit is ask


def test_defaults_without_config_entries(machine: Machine) -> None:
    state = PolicyState.from_config(InstanceConfig(allowed_tools=()))
    assert decide(state, "Bash", {"command": "ls"}, machine.ctx).action == "ask"
    assert decide(state, "Read", {"file_path": "src/a"}, machine.ctx).action == "allow"
    assert decide(state, "Write", {"file_path": "src/a"}, machine.ctx).action == "ask"
    assert decide(state, "Edit", {"file_path": "src/a"}, machine.ctx).action == "ask"
    memory = decide(state, "mcp__mnemara__write_memory", {"text": "x"}, machine.ctx)
    assert memory.action == "allow"


def test_mcp_namespace_defaults_and_overrides(machine: Machine) -> None:
    config = InstanceConfig(
        allowed_tools=(ToolPolicy(tool="mcp__fetch__fetch", mode="ask"),),
        mcp_servers=({"name": "fetch", "command": "uvx"}, {"name": "db", "command": "x"}),  # type: ignore[arg-type]
    )
    state = PolicyState.from_config(config)
    assert decide(state, "mcp__db__query", {"q": 1}, machine.ctx).action == "allow"
    assert decide(state, "mcp__fetch__fetch", {"url": "u"}, machine.ctx).action == "ask"
    assert decide(state, "mcp__other__x", {}, machine.ctx).action == "ask"
    denied = PolicyState.from_config(
        InstanceConfig(
            allowed_tools=(ToolPolicy(tool="mcp__db__*", mode="deny"),),
            mcp_servers=({"name": "db", "command": "x"},),  # type: ignore[arg-type]
        )
    )
    assert decide(denied, "mcp__db__query", {}, machine.ctx).action == "deny"


def test_write_memory_alias_can_be_denied(machine: Machine) -> None:
    state = PolicyState.from_config(
        InstanceConfig(allowed_tools=(ToolPolicy(tool="WriteMemory", mode="deny"),))
    )
    verdict = decide(state, "mcp__mnemara__write_memory", {"text": "x"}, machine.ctx)
    assert verdict.action == "deny"


def test_deny_mode_wins(machine: Machine) -> None:
    state = PolicyState.from_config(
        InstanceConfig(allowed_tools=(ToolPolicy(tool="Bash", mode="deny"),))
    )
    assert decide(state, "Bash", {"command": "git status"}, machine.ctx).action == "deny"


def test_home_only_off_lets_file_tools_leave_home(machine: Machine) -> None:
    ctx = type(machine.ctx)(**{**machine.ctx.__dict__, "home_only": False})
    verdict = decide(machine.state, "Read", {"file_path": str(machine.outside / "data.txt")}, ctx)
    assert verdict.action == "allow"
    assert decide(machine.state, "Write", {"file_path": "/etc/x"}, ctx).action == "ask"


def test_configured_roots_replace_home(tmp_path: Path, machine: Machine) -> None:
    ctx = type(machine.ctx).build(cwd=machine.project, home=machine.home, roots=[machine.outside])
    inside = decide(machine.state, "Read", {"file_path": str(machine.outside / "data.txt")}, ctx)
    home = decide(machine.state, "Read", {"file_path": str(machine.project / "x")}, ctx)
    assert (inside.action, home.action) == ("allow", "deny")


def test_a_bad_config_pattern_names_its_field(machine: Machine) -> None:
    config = InstanceConfig(
        allowed_tools=(ToolPolicy(tool="Bash", allowed_patterns=("ok", r"(a)\1")),)
    )
    with pytest.raises(PolicyError) as info:
        PolicyState.from_config(config, path=Path("/x/config.json"))
    assert info.value.field == "allowed_tools[0].allowed_patterns[1]"
    assert "/x/config.json" in str(info.value)


@pytest.mark.parametrize(
    ("tool", "server"),
    [
        ("mcp__a__b", "a"),
        ("mcp__a__b__c", "a"),
        ("mcp__a", None),
        ("mcp____b", None),
        ("Bash", None),
    ],
)
def test_mcp_server_of(tool: str, server: str | None) -> None:
    assert mcp_server_of(tool) == server


def test_a_target_too_long_to_match_is_not_offered_for_always(machine: Machine) -> None:
    verdict = decide(machine.state, "Bash", {"command": "make " + "x" * 5_000}, machine.ctx)
    assert verdict.action == "ask" and verdict.remember == ()


def test_decide_never_raises_on_random_input(machine: Machine) -> None:
    rng = random.Random(5)
    alphabet = "ab ~/.*?[]{}()<>|&;$`'\"\\\n\t\x00\x1b\u200b\ud800=-#!%:,@+"
    tools = ["Bash", "Read", "Write", "Glob", "mcp__x__y", "mcp__mnemara__z"]
    for _ in range(2_000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40)))
        tool = rng.choice(tools)
        tool_input = {"command": text, "file_path": text, "pattern": text, "path": text}
        verdict = decide(machine.state, tool, tool_input, machine.ctx)
        assert verdict.action in ("allow", "ask", "deny")


def test_a_compound_reason_quotes_each_segment(machine: Machine) -> None:
    both = decide(machine.state, "Bash", {"command": "make build && npm test"}, machine.ctx)
    assert both.reason == "not allowed by a pattern: `make build`, `npm test`"
    assert "|" not in both.reason  # `|` would read like a pipe between the segments
    one = decide(machine.state, "Bash", {"command": "git status && make build"}, machine.ctx)
    assert one.reason == "not allowed by a pattern: `make build`"


def test_a_segment_holding_a_backtick_is_quoted_with_double_backticks(machine: Machine) -> None:
    verdict = decide(machine.state, "Bash", {"command": "make 'a`b' && npm test"}, machine.ctx)
    assert verdict.reason == "not allowed by a pattern: `` make 'a`b' ``, `npm test`"


def test_the_operator_sees_the_reason_escaped(machine: Machine) -> None:
    verdict = decide(machine.state, "Bash", {"command": "make 'a\tb' && npm test"}, machine.ctx)
    assert "\t" in verdict.reason  # the segment as it will run
    shown = prompt_text(verdict)
    assert "why asked: not allowed by a pattern: `make 'a\\tb'`, `npm test`" in shown
    assert "\t" not in shown
