"""What a call may change and how long it asks to wait, by tool and input: the sentinel
measures a call by its effect ("read" calls repeat harmlessly, "test" runs record their
outcome, "change" may move the world) and gives a waiting call the patience it asked for."""

from __future__ import annotations

from typing import Any

import pytest

from runtime.guard.calls import FILE_TOOLS, READ_TOOLS, effect_of, runs_tests, wait_seconds

NOTES = frozenset({"mcp__mnemara__memory_write", "TodoWrite"})


@pytest.mark.parametrize(
    ("name", "arguments", "expected"),
    [
        ("mcp__mnemara__memory_write", {}, "notes"),
        ("TodoWrite", {}, "notes"),
        ("Write", {"file_path": "a"}, "files"),
        ("Edit", {}, "files"),
        ("MultiEdit", {}, "files"),
        ("NotebookEdit", {}, "files"),
        ("Bash", {}, "change"),
        ("Bash", {"command": ["ls"]}, "change"),
        ("Bash", {"command": "ls -la"}, "read"),
        ("Bash", {"command": "pytest -q"}, "test"),
        ("Bash", {"command": "rm x"}, "change"),
        ("Bash", {"command": "echo hi > out.txt"}, "files"),
        ("Read", {}, "read"),
        ("TaskOutput", {}, "read"),
        ("WebSearch", {}, "read"),
        ("mcp__mnemara__graph_query", {}, "read"),
        # An MCP tool is read by the start of its own name, in any case.
        ("mcp__x__GetThing", {}, "read"),
        ("mcp__x__list", {}, "read"),
        ("mcp__a__b__lookup_user", {}, "read"),
        ("mcp__x__put", {}, "change"),
        ("mcp__read__put", {}, "change"),
        ("getfoo", {}, "change"),
        ("Task", {}, "change"),
    ],
)
def test_what_a_call_may_change(name: str, arguments: dict[str, Any], expected: str) -> None:
    assert effect_of(name, arguments, NOTES) == expected


def test_a_bookkeeping_tool_is_notes_before_anything_else() -> None:
    assert effect_of("Write", {}, {"Write"}) == "notes"
    assert effect_of("Bash", {"command": "rm x"}, {"Bash"}) == "notes"


READ_PREFIXES = (
    "read", "list", "get", "search", "inspect", "query", "show", "view", "fetch", "find",
    "check", "describe", "status", "poll", "wait", "watch", "count", "lookup", "peek",
)  # fmt: skip


def test_each_reading_prefix_makes_an_mcp_tool_read() -> None:
    for prefix in READ_PREFIXES:
        assert effect_of(f"mcp__srv__{prefix}_it", {}, ()) == "read", prefix
        assert effect_of(f"{prefix}_it", {}, ()) == "change", prefix


def test_the_tool_families() -> None:
    assert frozenset({"Write", "Edit", "MultiEdit", "NotebookEdit"}) == FILE_TOOLS
    assert {"Read", "Grep", "Glob", "LS", "BashOutput", "TaskOutput"} <= READ_TOOLS
    assert not READ_TOOLS & FILE_TOOLS


@pytest.mark.parametrize(
    ("name", "arguments", "expected"),
    [
        ("Bash", {"command": "pytest -q"}, True),
        ("Bash", {"command": "ls"}, False),
        ("Bash", {"command": None}, False),
        ("Bash", {}, False),
        ("Task", {"command": "pytest -q"}, False),
    ],
)
def test_which_calls_run_tests(name: str, arguments: dict[str, Any], expected: bool) -> None:
    assert runs_tests(name, arguments) is expected


@pytest.mark.parametrize(
    ("name", "arguments", "expected"),
    [
        # A blocking read of a background task: its timeout is in milliseconds, 30 s unset.
        ("TaskOutput", {"block": True}, 30.0),
        ("BashOutput", {"block": True, "timeout": 5000}, 5.0),
        ("TaskOutput", {"block": True, "timeout": 2500.0}, 2.5),
        ("TaskOutput", {"block": True, "timeout": 0}, 30.0),
        ("TaskOutput", {"block": True, "timeout": True}, 30.0),
        ("TaskOutput", {"block": True, "timeout": "5000"}, 30.0),
        ("BashOutput", {"block": False, "timeout": 5000}, None),
        ("TaskOutput", {"timeout": 5000}, None),
        # A Bash command waits for the sum of its sleeps.
        ("Bash", {"command": "sleep 2"}, 2.0),
        ("Bash", {"command": "sleep 2s; sleep 1m; sleep 0.5h; sleep 1d"}, 2 + 60 + 1800 + 86400),
        ("Bash", {"command": "sleep 1.5 && ls"}, 1.5),
        ("Bash", {"command": "ls"}, None),
        ("Bash", {"command": "asleep 3"}, None),
        ("Bash", {"command": ["sleep 3"]}, None),
        ("Bash", {}, None),
        # Other tools: the longest wait-like input that is a number, not a cap on the call.
        ("X", {"wait": 3, "delay": 7, "timeout": 100}, 7.0),
        ("X", {"seconds": 2.5}, 2.5),
        ("X", {"Poll_interval": 4}, 4.0),
        ("X", {"read_timeout": 9}, None),
        ("X", {"wait": "3"}, None),
        ("X", {"wait": True}, None),
        ("X", {"wait": 0}, 0.0),
        ("X", {"count": 3}, None),
        ("X", {}, None),
    ],
)
def test_how_long_a_call_asks_to_wait(
    name: str, arguments: dict[str, Any], expected: float | None
) -> None:
    assert wait_seconds(name, arguments) == expected
