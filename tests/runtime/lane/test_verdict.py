"""`lane_verdict` and the guard's use of it: each lane rule, on real directories in tmp_path.

The working directory is `work/`; `outside/` sits next to it; `work/link` is a symlink to
`outside/`. Paths are judged where the write would land, so `..` and symlinks cannot leave
the lane unnoticed.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from runtime.guard.guard import Guard, GuardSettings
from runtime.guard.lane import lane_verdict
from runtime.policy.approver import HeadlessAsker, PolicyApprover
from runtime.policy.context import PolicyContext
from runtime.policy.patterns import compile_pattern, exact_pattern
from runtime.policy.policy import PolicyState
from runtime.policy.rules import RuleSet
from runtime.turn.driver import Decision, ToolCallRequest
from tests.runtime.lane.lane_kit import call, lane_of, refusal, verdict


@pytest.fixture
def work(tmp_path: Path) -> Path:
    (tmp_path / "work" / "src").mkdir(parents=True)
    (tmp_path / "outside").mkdir()
    (tmp_path / "work" / "link").symlink_to(tmp_path / "outside")
    (tmp_path / "work" / "src" / "escape.py").symlink_to(tmp_path / "outside" / "x.py")
    return tmp_path / "work"


WRITABLE = lane_of('writable: ["src/**", "notes.md", "/tmp-abs-only/*.log"]')


@pytest.mark.parametrize(
    "path", ["src/a.py", "src/deep/er/b.py", "src", "notes.md", "./src/../src/c.py"]
)
def test_a_write_inside_writable_is_left_to_the_policy(work: Path, path: str) -> None:
    for tool in ("Write", "Edit", "MultiEdit"):
        assert verdict(WRITABLE, call(tool, file_path=path), work) is None
    assert verdict(WRITABLE, call("NotebookEdit", notebook_path=path), work) is None


@pytest.mark.parametrize(
    "path",
    [
        "README.md",  # in the working directory, but not writable
        "../outside/x.txt",  # `..` out of the working directory
        "src/../../outside/x.txt",  # `..` through a writable directory
        "link/x.txt",  # a symlink in the working directory pointing out
        "src/escape.py",  # a symlinked file in a writable directory pointing out
        "/etc/passwd",  # absolute
        "~/notes.md",  # the home directory, not the working directory
        "~root/x",  # someone else's home: cannot be resolved
        "",
    ],
)
def test_a_write_outside_writable_is_denied_naming_the_rule(work: Path, path: str) -> None:
    message = refusal(verdict(WRITABLE, call("Write", file_path=path, content="x"), work))
    assert "lane" in message and "role.md" in message


def test_the_denial_names_the_resolved_path_and_the_globs(work: Path) -> None:
    message = refusal(verdict(WRITABLE, call("Edit", file_path="link/x.txt"), work))
    outside = os.path.realpath(work.parent / "outside")
    assert message.startswith(f"{outside}/x.txt is outside this panel's lane (writable: src/**")


def test_absolute_globs_are_allowed(work: Path, tmp_path: Path) -> None:
    lane = lane_of(f'writable: ["{tmp_path}/outside/*.log"]')
    assert verdict(lane, call("Write", file_path="../outside/a.log"), work) is None
    refusal(verdict(lane, call("Write", file_path="../outside/a.txt"), work))
    refusal(verdict(lane, call("Write", file_path="../outside/sub/a.log"), work))


def test_no_writable_key_leaves_writes_alone(work: Path) -> None:
    lane = lane_of("tools: [Write]")
    assert verdict(lane, call("Write", file_path="/etc/passwd"), work) is None


@pytest.mark.parametrize(
    "command",
    [
        "echo x > ../outside.txt",
        "echo x >> link/log",
        "cat a 2> /tmp/err",
        "echo x | tee src/ok.txt ../bad.txt",
        "cp src/a.py ../outside/",
        "mv src/a.py link/",
        "rm -rf ../outside",
        "touch README.md",
        "mkdir ../newdir",
        "sed -i s/a/b/ ../outside/f",
        "dd if=src/a of=../outside/b",
        "cd .. && touch x",
        "cd src && echo hi > ../../outside/f",
        "ln -s /etc/passwd ../passwd-link",
    ],
)
def test_bash_writes_outside_writable_are_refusal(work: Path, command: str) -> None:
    message = refusal(verdict(WRITABLE, call("Bash", command=command), work))
    assert "outside this panel's lane (writable:" in message


@pytest.mark.parametrize(
    "command",
    [
        "echo x > src/out.txt",
        "cat notes.md > /dev/null 2>&1",
        "cp README.md src/",
        "sed -i s/a/b/ src/a.py",
        "touch src/new.py && perl -pi -e s/a/b/ src/a.py",
        "ls -la ..",  # reading, not writing
        "echo $(rm -rf ..)",  # unparseable: left to the policy (which asks)
        "bash -c 'echo x > ../f'",  # an interpreter: left to the policy
    ],
)
def test_bash_that_does_not_write_outside_is_left_to_the_policy(work: Path, command: str) -> None:
    assert verdict(WRITABLE, call("Bash", command=command), work) is None


READ_LANE = lane_of("tools: ['*']")  # no `readable`: home and working directory only


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("Read", {"file_path": "src/a.py"}),
        ("Read", {"file_path": "/dev/null"}),
        ("Grep", {"pattern": "x"}),
        ("Glob", {"pattern": "**/*.py"}),
        ("Glob", {"pattern": "*.py", "path": "src"}),
        ("NotebookRead", {"notebook_path": "a.ipynb"}),
    ],
)
def test_reads_inside_the_working_directory_pass(
    work: Path, tool: str, args: dict[str, str]
) -> None:
    assert verdict(READ_LANE, call(tool, **args), work) is None


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("Read", {"file_path": "../outside/secret"}),
        ("Read", {"file_path": "link/secret"}),
        ("Read", {"file_path": "/etc/hostname"}),
        ("Grep", {"pattern": "x", "path": ".."}),
        ("Glob", {"pattern": "../../**/*"}),
        ("Glob", {"pattern": "/etc/*"}),
        ("NotebookRead", {"notebook_path": "../n.ipynb"}),
    ],
)
def test_reads_outside_readable_are_refusal(work: Path, tool: str, args: dict[str, str]) -> None:
    assert "readable" in refusal(verdict(READ_LANE, call(tool, **args), work))


def test_without_readable_the_home_directory_is_readable_too(work: Path, tmp_path: Path) -> None:
    home = tmp_path / "outside"  # the user's home, beside the working directory
    assert (
        lane_verdict(READ_LANE, call("Read", file_path="../outside/notes"), work, home=home) is None
    )
    assert lane_verdict(READ_LANE, call("Read", file_path="~/notes"), work, home=home) is None
    refusal(lane_verdict(READ_LANE, call("Read", file_path="/etc/hostname"), work, home=home))


def test_readable_globs_widen_and_narrow_reads(work: Path, tmp_path: Path) -> None:
    lane = lane_of(f'readable: ["src/**", "{tmp_path}/outside/**"]')
    assert verdict(lane, call("Read", file_path="../outside/doc"), work) is None
    assert verdict(lane, call("Read", file_path="src/a.py"), work) is None
    refusal(verdict(lane, call("Read", file_path="README.md"), work))


def test_tools_entries_match_exactly_by_glob_and_by_short_name(work: Path) -> None:
    lane = lane_of("tools: [Read, 'Note*', write_memory]")
    for name in ("Read", "NotebookRead", "mcp__mnemara__write_memory"):
        got = verdict(lane, call(name, file_path="src/a", notebook_path="a.ipynb"), work)
        assert got is None, name
    for name in ("Write", "Bash", "mcp__other__write_memory", "read"):
        assert "is not one of this panel's tools" in refusal(verdict(lane, call(name), work))


def test_max_turn_tool_calls_refuses_the_call_after_the_nth(work: Path) -> None:
    lane = lane_of("max_turn_tool_calls: 2")
    assert verdict(lane, call("Read", file_path="a"), work, turn_calls=2) is None
    message = refusal(verdict(lane, call("Read", file_path="a"), work, turn_calls=3))
    assert "at most 2 tool calls" in message


def recipients(c: ToolCallRequest) -> tuple[str, ...] | None:
    to = c.input.get("to")
    return (str(to),) if c.name == "send" else None


def test_recipients_outside_the_list_are_refused(work: Path) -> None:
    lane = lane_of("recipients: [reviewer]")
    assert verdict(lane, call("send", to="reviewer"), work, recipients_of=recipients) is None
    message = refusal(verdict(lane, call("send", to="ops"), work, recipients_of=recipients))
    assert "this panel may message only: reviewer" in message and "'ops'" in message
    broadcast = refusal(verdict(lane, call("send", to="*"), work, recipients_of=recipients))
    assert "broadcast" in broadcast
    nobody = lane_of("recipients: []")
    assert "no one" in refusal(verdict(nobody, call("send", to="reviewer"), work,
                                      recipients_of=recipients))  # fmt: skip
    everyone = lane_of("recipients: ['*']")
    assert verdict(everyone, call("send", to="*"), work, recipients_of=recipients) is None


# Patterns match the parser's canonical spelling: redirections written `>target`.
COMMANDS = lane_of("writable: ['src/**']\ncommands: ['git status', 'echo [a-z]+( >src/[a-z.]+)?']")


@pytest.mark.parametrize("command", ["git status", "echo hi > src/x.txt", "git status && echo a"])
def test_commands_every_segment_of_which_matches_are_left_to_the_policy(
    work: Path, command: str
) -> None:
    # A lane narrows: a command it names is not allowed by it, only not refused.
    assert verdict(COMMANDS, call("Bash", command=command), work) is None


@pytest.mark.parametrize(
    ("command", "says"),
    [
        ("git status; git push", "`git push` is not one of this panel's lane commands"),
        ("git status && ls", "`ls` is not one of"),
        ("FOO=1 git status", "is not one of"),
        ("echo $(whoami)", "cannot be checked against this panel's lane commands"),
    ],
)
def test_commands_not_wholly_covered_are_refused(work: Path, command: str, says: str) -> None:
    message = refusal(verdict(COMMANDS, call("Bash", command=command), work))
    assert says in message and "role.md" in message


def test_an_empty_commands_list_refuses_every_command(work: Path) -> None:
    lane = lane_of("commands: []")
    assert "lane commands (none" in refusal(verdict(lane, call("Bash", command="ls"), work))
    assert verdict(lane_of("writable: ['src/**']"), call("Bash", command="ls"), work) is None


def test_relative_writes_after_cd_are_judged_from_every_directory(work: Path) -> None:
    # The parser keeps no `&&` from `;`: as the policy does, a relative path after `cd` is
    # judged from each directory the command may be in, so `touch src/new.py` is the way.
    refusal(verdict(WRITABLE, call("Bash", command="cd src && touch new.py"), work))


def test_a_pattern_never_allows_a_write_outside_writable(work: Path) -> None:
    lane = lane_of("writable: ['src/**']\ncommands: ['echo .*']")
    refusal(verdict(lane, call("Bash", command="echo x > ../f"), work))


# -- through the guard ---------------------------------------------------------------------------


def approver(work: Path, remembered: RuleSet | None = None) -> PolicyApprover:
    home = work.parent
    context = PolicyContext.build(cwd=work, home=home, search_path="")
    return PolicyApprover(PolicyState(remembered=remembered or RuleSet()), context, HeadlessAsker())


async def decide(guard: Guard, c: ToolCallRequest) -> Decision:
    guard.begin_turn(1)
    return await guard.decide(c)


@pytest.mark.anyio
async def test_a_lane_denial_beats_an_always_rule(work: Path) -> None:
    command = "echo x > ../outside.txt"
    canonical = "echo x >../outside.txt"  # what an "always" answer stores
    rules = RuleSet().with_patterns("Bash", [compile_pattern(exact_pattern(canonical))])
    guard = Guard(approver(work, rules), GuardSettings(sentinel=False))
    assert (await decide(guard, call("Bash", command=command))).allow  # the rule alone allows
    guard.set_lane(WRITABLE, work)
    refused = await decide(guard, call("Bash", command=command))
    assert not refused.allow and "outside this panel's lane" in (refused.message or "")


@pytest.mark.anyio
async def test_a_lane_never_widens_what_the_policy_allows(work: Path) -> None:
    """#28: `commands: ['.*']` in a role doc grants nothing: the policy still asks (and a
    headless policy's question is a no)."""
    guard = Guard(approver(work), GuardSettings(sentinel=False))
    assert not (await decide(guard, call("Bash", command="git status"))).allow  # headless: asks
    guard.set_lane(lane_of("commands: ['.*']"), work)
    for command in ("git status", "touch x", "bash -c id"):
        refused = await decide(guard, call("Bash", command=command))
        assert not refused.allow and "Lane" not in (refused.message or ""), command
    guard.set_lane(lane_of("commands: ['git status', 'cat .*']"), work)
    narrowed = await decide(guard, call("Bash", command="touch x"))
    assert not narrowed.allow and "Lane: `touch x` is not one of" in (narrowed.message or "")


@pytest.mark.anyio
async def test_the_guard_counts_calls_for_max_turn_tool_calls(work: Path) -> None:
    guard = Guard(approver(work), GuardSettings(sentinel=False))
    guard.set_lane(lane_of("max_turn_tool_calls: 1"), work)
    guard.begin_turn(1)
    assert (await guard.decide(call("Read", file_path="a"))).allow
    second = await guard.decide(call("Read", file_path="a"))
    assert not second.allow and "at most 1 tool calls" in (second.message or "")
    guard.begin_turn(2)  # a new turn starts the count again
    assert (await guard.decide(call("Read", file_path="a"))).allow


def test_mnemaras_own_file_reads_are_held_to_readable(work: Path) -> None:
    from runtime.guard.lane import lane_read_refusal

    lane = lane_of("tools: [skeleton]")  # `Read` itself not listed: only the path counts
    home = work.parent / "home"
    assert lane_read_refusal(lane, "src/a.py", work, home=home) is None
    refusal = lane_read_refusal(lane, "../outside/x", work, home=home)
    assert refusal is not None and "outside this panel's lane (readable" in refusal
