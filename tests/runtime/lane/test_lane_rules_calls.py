"""The lane's rules other than the shell's, pinned message by message: the turn's call cap at
its boundary, which tool names a `tools` entry lets through, who a send may reach, and which
paths a read may name (a Glob's pattern reaches beyond its `path`). Each refusal says which
rule of which role doc refused and what to do instead, so the model can act on it.

The working directory is `work/` in tmp_path; `outside/` sits beside it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from runtime.guard.lane import (
    DEFAULT_READABLE,
    lane_read_refusal,
    lane_verdict,
    tool_listed,
)
from runtime.turn.driver import ToolCallRequest
from tests.runtime.lane.lane_kit import call, lane_of, refusal, verdict


@pytest.fixture
def work(tmp_path: Path) -> Path:
    (tmp_path / "work" / "src").mkdir(parents=True)
    (tmp_path / "outside").mkdir()
    (tmp_path / "home").mkdir()
    return tmp_path / "work"


def test_the_call_cap_refuses_only_past_its_limit(work: Path) -> None:
    lane = lane_of("max_turn_tool_calls: 3")
    assert verdict(lane, call("Task"), work, turn_calls=3) is None
    assert refusal(verdict(lane, call("Task"), work, turn_calls=4)) == (
        "this panel's lane allows at most 3 tool calls in one turn "
        "(max_turn_tool_calls in role.md); end the turn now"
    )
    assert verdict(lane_of("tools: ['*']"), call("Task"), work, turn_calls=10_000) is None
    zero = lane_of("max_turn_tool_calls: 0")
    assert verdict(zero, call("Task"), work) is None  # the guard counts this call from 1
    assert "at most 0 tool calls" in refusal(verdict(zero, call("Task"), work, turn_calls=1))


def test_the_call_cap_comes_before_every_other_rule(work: Path) -> None:
    lane = lane_of("max_turn_tool_calls: 1\ntools: [Read]")
    assert "at most 1 tool calls" in refusal(verdict(lane, call("Bash"), work, turn_calls=2))


@pytest.mark.parametrize(
    ("name", "entries", "listed"),
    [
        ("Read", ("Read",), True),
        ("Read", ("read",), False),
        ("NotebookRead", ("Note*",), True),
        ("NotebookRead", ("Note?",), False),
        ("mcp__mnemara__wiki_read", ("wiki_read",), True),
        ("mcp__mnemara__wiki_read", ("wiki_*",), True),
        ("mcp__mnemara__wiki_read", ("mcp__mnemara__*",), True),
        ("mcp__other__wiki_read", ("wiki_read",), False),
        ("mcp__other__wiki_read", ("mcp__*",), True),
        ("wiki_read", ("mcp__mnemara__wiki_read",), False),
        ("Bash", (), False),
        ("Bash", ("Read", "Write", "Bash"), True),
    ],
)
def test_which_tools_an_entry_lets_through(
    name: str, entries: tuple[str, ...], listed: bool
) -> None:
    assert tool_listed(name, entries) is listed


def test_an_unlisted_tool_is_refused_naming_the_list(work: Path) -> None:
    assert refusal(verdict(lane_of("tools: [Read, Grep]"), call("Bash"), work)) == (
        "Bash is not one of this panel's tools (tools: Read, Grep, in role.md); use one of those"
    )


@pytest.mark.parametrize(
    ("count", "shown"),
    [
        (12, ", ".join(f"T{i}" for i in range(12))),
        (13, ", ".join(f"T{i}" for i in range(12)) + " and 1 more"),
        (15, ", ".join(f"T{i}" for i in range(12)) + " and 3 more"),
    ],
)
def test_a_long_list_is_shown_by_its_first_twelve(work: Path, count: int, shown: str) -> None:
    entries = ", ".join(f"T{i}" for i in range(count))
    message = refusal(verdict(lane_of(f"tools: [{entries}]"), call("Bash"), work))
    assert message == f"Bash is not one of this panel's tools (tools: {shown}, in role.md); " + (
        "use one of those"
    )


def named(c: ToolCallRequest) -> tuple[str, ...] | None:
    to = c.input.get("to")
    return tuple(str(t) for t in to) if isinstance(to, list) else None


@pytest.mark.parametrize(
    ("recipients", "to", "says"),
    [
        ("[b]", ["b"], None),
        ("[b, c]", ["c", "b"], None),
        ("[b]", ["b", "c", "d"], "not sent to 'c': this panel may message only: b"),
        ("[b, c]", ["*"], "not sent to everyone (a broadcast): this panel may message only: b, c"),
        ("[]", ["b"], "not sent to 'b': this panel may message only: no one"),
        ("['*']", ["anyone", "*"], None),
        ("[b]", [], None),
    ],
)
def test_who_a_send_may_reach(work: Path, recipients: str, to: list[str], says: str | None) -> None:
    lane = lane_of(f"recipients: {recipients}")
    got = verdict(lane, call("send", to=to), work, recipients_of=named)
    if says is None:
        assert got is None
    else:
        assert refusal(got) == f"{says} (recipients in role.md)"


def test_recipients_are_judged_only_for_sends_and_only_with_a_list(work: Path) -> None:
    lane = lane_of("recipients: [b]")
    assert verdict(lane, call("send", to="x"), work, recipients_of=named) is None  # not a send
    assert verdict(lane, call("send", to=["x"]), work) is None  # the owner tells no one
    unlisted = lane_of("tools: ['*']")
    assert verdict(unlisted, call("send", to=["x"]), work, recipients_of=named) is None


def test_recipients_come_before_the_path_rules(work: Path) -> None:
    lane = lane_of("recipients: [b]\nwritable: ['src/**']")
    got = verdict(lane, call("Write", file_path="../x", to=["c"]), work, recipients_of=named)
    assert refusal(got).startswith("not sent to 'c'")


@pytest.mark.parametrize(
    ("tool", "args", "path"),
    [
        ("Read", {"file_path": "../outside/x"}, "outside/x"),
        ("NotebookRead", {"notebook_path": "../outside/n.ipynb"}, "outside/n.ipynb"),
        ("Grep", {"pattern": "x", "path": "../outside"}, "outside"),
        ("Glob", {"pattern": "*.py", "path": "../outside"}, "outside"),
        ("Glob", {"pattern": "../*.py", "path": "src"}, "work"),
        ("Glob", {"pattern": "../../outside/*.py", "path": "src/"}, "outside"),
        ("Glob", {"pattern": "/etc/*", "path": "src"}, "/etc"),
    ],
)
def test_a_read_outside_readable_names_where_it_lands(
    work: Path, tool: str, args: dict[str, str], path: str
) -> None:
    lane = lane_of("readable: ['src/**']")
    message = refusal(verdict(lane, call(tool, **args), work))
    where = path if path.startswith("/") else f"{work.parent}/{path}"
    assert message == (
        f"{where} is outside this panel's lane (readable: src/**, in role.md); "
        "this is a fixed rule, do not retry: work inside the lane or ask the operator"
    )


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("Read", {"file_path": "src/a.py"}),
        ("Glob", {"pattern": "*.py", "path": "src"}),
        ("Glob", {"pattern": "deep/*.py", "path": "src/"}),
        ("Glob", {"pattern": "deep/../*.py", "path": "src"}),
        ("Grep", {"pattern": "x", "path": "src"}),
    ],
)
def test_a_read_inside_readable_is_left_to_the_policy(
    work: Path, tool: str, args: dict[str, str]
) -> None:
    assert verdict(lane_of("readable: ['src/**']"), call(tool, **args), work) is None


@pytest.mark.parametrize("tool", ["Grep", "Glob"])
def test_a_search_without_a_path_searches_the_working_directory(work: Path, tool: str) -> None:
    message = refusal(verdict(lane_of("readable: ['src/**']"), call(tool, pattern="x"), work))
    assert message.startswith(f"{work} is outside this panel's lane (readable: src/**,")
    assert verdict(lane_of("readable: ['**']"), call(tool, pattern="x"), work) is None


@pytest.mark.parametrize(
    ("tool", "args", "raw"),
    [
        ("Read", {}, None),
        ("Read", {"file_path": ""}, ""),
        ("Read", {"file_path": 7}, 7),
        ("NotebookRead", {"notebook_path": "~nobody-here/n"}, "~nobody-here/n"),
        ("Glob", {"pattern": "x", "path": 3}, 3),
    ],
)
def test_a_read_path_that_cannot_be_checked_is_refused(
    work: Path, tool: str, args: dict[str, object], raw: object
) -> None:
    message = refusal(verdict(lane_of("tools: ['*']"), call(tool, **args), work))
    assert message == (
        f"the path {raw!r} cannot be checked against this panel's lane "
        "(readable in role.md); give a plain path"
    )


def test_without_readable_the_home_and_working_directory_are_shown(work: Path) -> None:
    message = refusal(verdict(lane_of("tools: ['*']"), call("Read", file_path="/etc/x"), work))
    assert message.startswith(
        "/etc/x is outside this panel's lane (readable: (home and working directory), in role.md)"
    )
    assert DEFAULT_READABLE == ("~/**", "**")


@pytest.mark.parametrize(
    ("readable", "path"),
    [
        ("['src/**']", "{work}/src"),  # an absolute path stays absolute
        ("['srcX/**']", "srcX"),  # only slashes come off its end
        ("['src /**']", "src "),  # and no spaces
        ("['src/**']", "src//"),
    ],
)
def test_a_glob_pattern_is_joined_to_its_path(work: Path, readable: str, path: str) -> None:
    (work / path.format(work=work)).mkdir(exist_ok=True)
    c = call("Glob", pattern="*.py", path=path.format(work=work))
    assert verdict(lane_of(f"readable: {readable}"), c, work) is None


def test_paths_under_home_use_the_home_given(work: Path) -> None:
    home = work.parent / "home"
    reads = lane_of("readable: ['~/**']")
    assert verdict(reads, call("Read", file_path="~/x"), work) is None
    assert verdict(reads, call("Read", file_path=f"{home}/x"), work) is None
    assert lane_read_refusal(reads, "~/x", work, home=home) is None
    default = lane_of("tools: ['*']")
    assert lane_read_refusal(default, f"{home}/x", work, home=home) is None
    writes = lane_of("writable: ['~/**']")
    assert verdict(writes, call("Write", file_path="~/x"), work) is None
    assert verdict(writes, call("Write", file_path=f"{home}/x"), work) is None


def test_the_home_directory_defaults_to_the_users(work: Path) -> None:
    lane = lane_of("tools: ['*']")
    assert lane_verdict(lane, call("Read", file_path="~/x"), work) is None
    assert lane_read_refusal(lane, "~/x", work) is None
    assert lane_read_refusal(lane, "/etc/x", work) is not None


@pytest.mark.parametrize(
    ("tool", "key"),
    [
        ("Write", "file_path"),
        ("Edit", "file_path"),
        ("MultiEdit", "file_path"),
        ("NotebookEdit", "notebook_path"),
    ],
)
def test_each_file_writer_is_judged_by_its_own_path_key(work: Path, tool: str, key: str) -> None:
    lane = lane_of("writable: ['src/**']")
    assert verdict(lane, call(tool, **{key: "src/a"}), work) is None
    assert refusal(verdict(lane, call(tool, **{key: "b"}), work)) == (
        f"{work}/b is outside this panel's lane (writable: src/**, in role.md); "
        "this is a fixed rule, do not retry: work inside the lane or ask the operator"
    )
    for raw in (None, 7, ""):
        assert refusal(verdict(lane, call(tool, **{key: raw}), work)) == (
            f"the path {raw!r} cannot be checked against this panel's lane "
            "(writable in role.md); give a plain path"
        )


def test_a_lane_without_a_rule_for_a_tool_has_nothing_to_say(work: Path) -> None:
    lane = lane_of("writable: ['src/**']")
    assert verdict(lane, call("WebFetch", url="http://x"), work) is None
    assert verdict(lane, call("Read", file_path="src/a"), work) is None
