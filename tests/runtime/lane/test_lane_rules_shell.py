"""The lane's `writable` and `commands` rules on Bash, pinned write by write: which words of
a command are the files it writes (not the program text of `sed -i` or `perl -i`), from which
directories a relative write is judged after `cd`, and that a write whose landing place
cannot be known (after `pushd` or `cd -`, or to `~user/x`) is refused, not waved through.

The working directory is `work/` in tmp_path with `src/` writable; `outside/` sits beside it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from runtime.guard.lane import LaneVerdict, bash_writes, lane_verdict
from runtime.instance.lane import Lane
from runtime.policy.limits import MAX_COMMAND_LENGTH
from runtime.policy.shell import Script, parse_command
from runtime.turn.driver import ToolCallRequest
from tests.runtime.lane.lane_kit import lane_of, refusal


@pytest.fixture
def work(tmp_path: Path) -> Path:
    (tmp_path / "work" / "src" / "deep").mkdir(parents=True)
    (tmp_path / "outside").mkdir()
    (tmp_path / "home").mkdir()
    return tmp_path / "work"


def bash(lane: Lane, command: object, work: Path) -> LaneVerdict | None:
    call = ToolCallRequest("t1", "Bash", {"command": command})
    return lane_verdict(lane, call, work, home=work.parent / "home")


def writes_of(command: str) -> list[tuple[str, bool]]:
    parsed = parse_command(command)
    assert isinstance(parsed, Script)
    (cmd,) = parsed.commands
    return bash_writes(cmd)


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("echo x > a", [("a", False)]),
        ("echo x >> a 2>&1", [("a", False)]),
        ("cat < a", []),
        ("echo x > *.log", [("*.log", True)]),
        ("tee a b", [("a", False), ("b", False)]),
        ("cp a *.txt", [("*.txt", True)]),
        ("touch ''", []),
        ("dd if=a of=b", [("b", False)]),
        # `sed -i`: its first operand is the script unless -e/-f gave one.
        ("sed -i s/a/b/ f", [("f", False)]),
        ("sed -i -e s/a/b/ f", [("f", False)]),
        ("sed -e s/a/b/ -i f", [("f", False)]),
        ("sed -i --expression s/a/b/ f", [("f", False)]),
        ("sed -i --expression=s/a/b/ f", [("f", False)]),
        ("sed -i -es/a/b/ f", [("f", False)]),
        ("sed -i -f prog.sed f", [("f", False)]),
        ("sed -i --file prog.sed f", [("f", False)]),
        ("sed -i --file=prog.sed f", [("f", False)]),
        ("sed -i -fprog.sed f", [("f", False)]),
        ("sed -i -l 5 s/a/b/ f", [("f", False)]),
        ("sed -i --line-length 5 s/a/b/ f", [("f", False)]),
        ("sed -i -n s/a/b/ f", [("f", False)]),
        ("sed -i s/a/b/ f g", [("f", False), ("g", False)]),
        ("sed s/a/b/ -i f", [("f", False)]),  # the script is the first operand, wherever
        # A file named like the script after `--expression`/`--file` is still written.
        ("sed -i --expression s/a/b/ s/a/b/", [("s/a/b/", False)]),
        ("sed -i --file p.sed p.sed", [("p.sed", False)]),
        # `perl -i`: the word after each -e/-E (alone or ending a cluster) is program text.
        ("perl -pi -e s/a/b/ f", [("f", False)]),
        ("perl -i -pe s/a/b/ f", [("f", False)]),
        ("perl -i -E say f", [("f", False)]),
        ("perl -pi -e s/a/b/ -e s/c/d/ f", [("f", False)]),
        ("perl -i --e x f", [("x", False), ("f", False)]),
        ("perl -i -X f", [("f", False)]),
        ("perl prog.pl -i f", [("prog.pl", False), ("f", False)]),
    ],
)
def test_the_files_a_command_writes(command: str, expected: list[tuple[str, bool]]) -> None:
    assert writes_of(command) == expected


@pytest.mark.parametrize(
    "command",
    [
        "sed -i s/a/b/ src/f",
        "sed -i -l 5 s/a/b/ src/f",
        "sed -i -e s/x/y/ -e s/a/b/ src/f",
        "perl -pi -e s/a/b/ -e s/c/d/ src/f",
        "perl -i -E say src/f",
        "echo x > src/deep/f.txt",
        "cd src && touch src/deep/x",  # from `work/` and from `work/src/`
        "cd src && touch /dev/null",
        "cd -P src && touch src/x",  # an option of `cd` is no directory
        "cd && touch /abs/x",
        "pushd src && touch /abs/never",  # absolute: the lost directory does not matter
        "pushd src && touch ~/x",
        "popd; ls > /dev/null",
        "cd -; ls",  # no write after it
        "echo x > src/*.log",  # a glob: the policy asks
    ],
)
def test_writes_inside_are_left_to_the_policy(work: Path, command: str) -> None:
    lane = lane_of(f"writable: ['src/**', '{work.parent}/home/**', '/abs/**']")
    assert bash(lane, command, work) is None


@pytest.mark.parametrize(
    ("writable", "command", "where"),
    [
        ("['src/**']", "sed -i s/a/b/ ../outside/f", "outside/f"),
        ("['src/**']", "perl -pi -e s/a/b/ ../outside/f", "outside/f"),
        ("['src/**']", "cd src && touch x", "work/x"),  # from the working directory
        ("['src/**']", "cd .. && touch src/x", "src/x"),  # and from where `cd` went
        ("['a', 'src/a']", "cd src ; cd deep ; touch a", "work/src/deep/a"),
        ("['x']", "cd && touch x", "home/x"),  # `cd` alone goes home
        ("['x']", "cd ~ && touch x", "home/x"),
    ],
)
def test_a_write_is_judged_from_every_directory_the_command_may_be_in(
    work: Path, writable: str, command: str, where: str
) -> None:
    message = refusal(bash(lane_of(f"writable: {writable}"), command, work))
    shown = writable.strip("[]").replace("'", "")
    assert message == (
        f"{work.parent}/{where} is outside this panel's lane (writable: {shown}, in role.md); "
        "this is a fixed rule, do not retry: work inside the lane or ask the operator"
    )


@pytest.mark.parametrize(
    ("writable", "command"),
    [
        ("['src/**']", "touch src/x"),
        ("['a', 'src/a']", "touch a"),
        ("['a', 'src/a']", "cd src ; touch a"),
        ("['x']", "touch x"),
    ],
)
def test_the_same_writes_pass_without_the_directory_change(
    work: Path, writable: str, command: str
) -> None:
    assert bash(lane_of(f"writable: {writable}"), command, work) is None


@pytest.mark.parametrize(
    ("command", "lost"),
    [
        ("pushd src && touch x", "pushd src"),
        ("popd ; echo x > f", "popd"),
        ("cd - && touch x", "cd -"),
        ("cd src deep && touch x", "cd src deep"),
        ("cd s* && touch x", "cd s*"),
        ("cd ~nobody-here && touch x", "cd ~nobody-here"),
        ("pushd src ; cd deep ; touch x", "pushd src"),
    ],
)
def test_a_relative_write_after_a_directory_change_that_cannot_be_followed_is_refused(
    work: Path, command: str, lost: str
) -> None:
    """Once the shell may be anywhere, a relative write may land anywhere: the lane cannot
    say it is inside, so it refuses (before, these were judged from the working directory
    alone, and `pushd .. && touch f` passed a lane of `**`)."""
    message = refusal(bash(lane_of("writable: ['**']"), command, work))
    assert message == (
        f"the write to {'f' if 'f' in command.split() else 'x'!r} after `{lost}` cannot be "
        "checked against this panel's lane (writable in role.md); give an absolute path "
        "or `cd` to a plain directory"
    )


def test_only_the_first_lost_directory_change_is_named(work: Path) -> None:
    long_dir = "d" * 300
    message = refusal(bash(lane_of("writable: ['**']"), f"pushd {long_dir} && touch x", work))
    assert f"after `pushd {long_dir[:194]}` cannot" in message


def test_a_write_whose_target_cannot_be_resolved_is_refused(work: Path) -> None:
    message = refusal(bash(lane_of("writable: ['**']"), "echo x > ~nobody-here/f", work))
    assert message == (
        "the path '~nobody-here/f' cannot be checked against this panel's lane "
        "(writable in role.md); give a plain path"
    )


def test_a_glob_write_is_skipped_but_the_writes_after_it_are_judged(work: Path) -> None:
    message = refusal(bash(lane_of("writable: ['src/**']"), "tee src/*.log ../x", work))
    assert message.startswith(f"{work.parent}/x is outside this panel's lane")


def test_writable_globs_under_home_use_the_home_given(work: Path) -> None:
    home = work.parent / "home"
    lane = lane_of("writable: ['~/notes/**']")
    for command in ("echo x > ~/notes/a", f"echo x > {home}/notes/a"):
        assert bash(lane, command, work) is None, command
    assert refusal(bash(lane, "echo x > notes/a", work)).startswith(f"{work}/notes/a is outside")


def test_without_writable_no_write_is_judged(work: Path) -> None:
    lane = lane_of("tools: [Bash]")
    for command in ("pushd .. && touch x", "echo x > ~nobody-here/f", "touch /etc/x"):
        assert bash(lane, command, work) is None


@pytest.mark.parametrize("command", [None, 3, ["ls"], "x" * (MAX_COMMAND_LENGTH + 1)])
def test_a_command_that_cannot_be_read_is_refused_only_by_a_commands_list(
    work: Path, command: object
) -> None:
    assert bash(lane_of("writable: ['src/**']"), command, work) is None
    message = refusal(bash(lane_of("commands: ['ls', 'git status']"), command, work))
    assert message == (
        "the command cannot be checked against this panel's lane commands "
        "(ls, git status, in role.md)"
    )


def test_an_unparseable_command_names_why(work: Path) -> None:
    message = refusal(bash(lane_of("commands: []"), "echo $(id)", work))
    assert message.startswith(
        "the command cannot be checked against this panel's lane commands (none, in role.md) ("
    )
    assert message.endswith("); write it as plain commands")
    assert bash(lane_of("writable: ['src/**']"), "echo $(id) > ../x", work) is None


def test_a_command_outside_the_list_is_named_in_its_canonical_spelling(work: Path) -> None:
    lane = lane_of("commands: ['ls']")
    message = refusal(bash(lane, "ls ;  git   push", work))
    assert message == (
        "`git push` is not one of this panel's lane commands (ls, in role.md); "
        "this is a fixed rule: run only those, or ask the operator"
    )
    long_word = "y" * 300
    cut = refusal(bash(lane, f"echo {long_word}", work))
    assert cut.startswith(f"`echo {long_word[:195]}` is not one of")


def test_commands_are_checked_before_writes_segment_by_segment(work: Path) -> None:
    lane = lane_of("writable: ['src/**']\ncommands: ['touch .*']")
    first = refusal(bash(lane, "touch ../x ; rm y", work))
    assert "is outside this panel's lane (writable" in first
    second = refusal(bash(lane, "rm y ; touch ../x", work))
    assert second.startswith("`rm y` is not one of")
