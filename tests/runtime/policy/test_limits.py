"""Caps before parsing: inputs too big to check are asked about at once, never allowed.

Speed is not asserted here (bench/policy_decide.py prints it); what is asserted is that a big
input gets the too-big answer, which is the answer that skips the slow work.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from runtime.policy.limits import (
    MAX_COMMAND_LENGTH,
    MAX_COMMAND_WORDS,
    MAX_DIRECTORY_CHANGES,
    MAX_INPUT_DEPTH,
    MAX_NAMED_PATHS,
    MAX_PATH_CHECKS,
    MAX_PATH_LENGTH,
    command_too_big,
)
from runtime.policy.policy import decide
from tests.runtime.policy.conftest import Machine, build_machine


def test_a_100_kb_command_is_asked_about_as_too_long(machine: Machine) -> None:
    command = "echo " + "a " * 50_000  # the machine's patterns allow `echo .*`
    verdict = decide(machine.state, "Bash", {"command": command}, machine.ctx)
    assert verdict.action == "ask"
    assert "too long to check" in verdict.reason
    assert verdict.remember == ()


def test_a_long_command_is_not_allowed_even_when_bash_is_allow(tmp_path: Path) -> None:
    machine = build_machine(tmp_path, bash_mode="allow")
    command = "echo " + "x " * (MAX_COMMAND_LENGTH // 2)
    verdict = decide(machine.state, "Bash", {"command": command}, machine.ctx)
    assert verdict.action == "ask"
    assert "too long to check" in verdict.reason


def test_the_length_cap_is_on_characters() -> None:
    assert command_too_big("echo " + "a" * (MAX_COMMAND_LENGTH - 5)) is None
    reason = command_too_big("echo " + "a" * MAX_COMMAND_LENGTH)
    assert reason is not None and str(MAX_COMMAND_LENGTH) in reason


def test_more_words_than_the_cap_ask_without_parsing(machine: Machine) -> None:
    # Short enough in characters, but too many words: `ls;` runs need no spaces to split.
    command = "ls;" * (MAX_COMMAND_WORDS + 1)
    assert len(command) < MAX_COMMAND_LENGTH
    verdict = decide(machine.state, "Bash", {"command": command}, machine.ctx)
    assert verdict.action == "ask"
    assert f"more than {MAX_COMMAND_WORDS} words" in verdict.reason
    assert command_too_big("ls;" * MAX_COMMAND_WORDS) is None


def test_a_command_under_the_caps_is_still_decided(machine: Machine) -> None:
    command = "ls " + " ".join(f"src/f{i}" for i in range(MAX_COMMAND_WORDS - 2))
    state = machine.state.with_session_tool("Bash")  # too long a target for any pattern
    verdict = decide(state, "Bash", {"command": command}, machine.ctx)
    assert verdict.action == "allow", verdict.reason


def test_too_many_directory_changes_ask(machine: Machine) -> None:
    command = " && ".join(["cd src"] * (MAX_DIRECTORY_CHANGES + 1) + ["ls"])
    state = machine.state.with_session_tool("Bash")
    verdict = decide(state, "Bash", {"command": command}, machine.ctx)
    assert verdict.action == "ask"
    assert "changes directory more than" in verdict.reason
    fewer = " && ".join(["cd src"] * MAX_DIRECTORY_CHANGES + ["ls"])
    assert decide(state, "Bash", {"command": fewer}, machine.ctx).action == "allow"


def test_the_path_budget_asks_once_spent(machine: Machine) -> None:
    # Every argument is resolved once per directory: 3 directories x 700 words > the budget.
    words = " ".join(f"f{i}" for i in range(700))
    command = f"cd src && cd .. && ls {words}"
    assert MAX_PATH_CHECKS < 3 * 700
    state = machine.state.with_session_tool("Bash")
    verdict = decide(state, "Bash", {"command": command}, machine.ctx)
    assert verdict.action == "ask"
    assert "too many paths to check" in verdict.reason


def test_a_spent_budget_still_denies_a_write_to_a_store(machine: Machine) -> None:
    padding = " ".join(f"f{i}" for i in range(700))
    store = machine.state_root / "_teams" / "crew" / "bus.sqlite"
    command = f"cd src && cd .. && ls {padding} && cp x {store}"
    verdict = decide(machine.state, "Bash", {"command": command}, machine.ctx)
    assert verdict.action == "deny", verdict.reason


@pytest.mark.parametrize("tool", ["Read", "Write", "Edit", "MultiEdit"])
def test_a_path_longer_than_path_max_asks(machine: Machine, tool: str) -> None:
    raw = "src/" + "a" * MAX_PATH_LENGTH
    verdict = decide(machine.state, tool, {"file_path": raw}, machine.ctx)
    assert verdict.action == "ask"
    assert "file_path is too long to check" in verdict.reason


def test_a_huge_glob_pattern_asks(machine: Machine) -> None:
    pattern = "*/" * MAX_PATH_LENGTH
    verdict = decide(machine.state, "Glob", {"pattern": pattern}, machine.ctx)
    assert verdict.action == "ask"
    assert "pattern is too long to check" in verdict.reason


def test_a_huge_edit_payload_only_needs_its_path_checked(machine: Machine) -> None:
    big = "x" * 1_000_000
    tool_input = {"file_path": "src/app.py", "old_string": big, "new_string": big}
    allowed = decide(machine.state, "Write", {**tool_input, "content": big}, machine.ctx)
    assert allowed.action == "allow", allowed.reason  # Write allows <project>/src/.*
    edit = decide(machine.state, "Edit", tool_input, machine.ctx)
    assert edit.action == "ask" and "too long" not in edit.reason


def nested(depth: int) -> Any:
    value: Any = "leaf"
    for _ in range(depth):
        value = {"x": value}
    return value


def test_mcp_input_nested_too_deep_asks(machine: Machine) -> None:
    verdict = decide(machine.state, "mcp__fetch__fetch", nested(MAX_INPUT_DEPTH + 5), machine.ctx)
    assert verdict.action == "ask"
    assert "nested too deeply" in verdict.reason
    shallow = decide(machine.state, "mcp__fetch__fetch", nested(MAX_INPUT_DEPTH - 1), machine.ctx)
    assert shallow.action == "allow"


def test_mcp_input_beyond_the_recursion_limit_is_not_a_crash(machine: Machine) -> None:
    verdict = decide(machine.state, "mcp__fetch__fetch", nested(5_000), machine.ctx)
    assert verdict.action == "ask"


def test_mcp_input_naming_too_many_paths_asks(machine: Machine) -> None:
    paths = [f"src/f{i}" for i in range(MAX_NAMED_PATHS + 1)]
    verdict = decide(machine.state, "mcp__fetch__fetch", {"paths": paths}, machine.ctx)
    assert verdict.action == "ask"
    assert "too many to check" in verdict.reason
