"""The shell parser: what it splits, how it spells segments, and what it refuses."""

from __future__ import annotations

import pytest

from runtime.policy.commands import command_hazards, program_of
from runtime.policy.shell import Script, Unparseable, parse_command


def canonical(text: str) -> list[str]:
    parsed = parse_command(text)
    assert isinstance(parsed, Script), parsed
    return [c.canonical for c in parsed.commands]


@pytest.mark.parametrize(
    ("text", "segments"),
    [
        ("ls -la", ["ls -la"]),
        ("a && b || c; d | e\nf", ["a", "b", "c", "d", "e", "f"]),
        ("git   status   ", ["git status"]),
        ("echo 'a b' \"c d\"", ["echo 'a b' 'c d'"]),
        ('echo "say \\"hi\\""', ["echo 'say \"hi\"'"]),
        ("echo a\\ b", ["echo 'a b'"]),
        ("ls *.py '*.py'", ["ls *.py '*.py'"]),
        ("cat ~/x '~/x'", ["cat ~/x '~/x'"]),
        ("cmd 2>&1 >out <in", ["cmd 2>&1 >out <in"]),
        ("cmd &>log", ["cmd &>log"]),
        ("cmd >&-", ["cmd >&-"]),
        ("ls;\n\nls", ["ls", "ls"]),
        ("echo ''", ["echo ''"]),
        ("echo a\\\nb", ["echo ab"]),
    ],
)
def test_segments_and_their_canonical_spelling(text: str, segments: list[str]) -> None:
    assert canonical(text) == segments


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   ",
        "; ls",
        "ls &&",
        "ls | | cat",
        "ls ;; x",
        "ls >",
        "ls > && x",
        "ls 2>&file",
        "cat <&file",
        "(ls)",
        "{ ls; }",
        "f() { ls; }",
        "echo $((1+2))",
        'echo "`id`"',
        "echo 'a",
        'echo "a',
        "echo a\\",
        "[[ -f x ]]",
        "for i in 1; do ls; done",
        "cat <<< hi",
        "! ls",
        "time ls",
    ],
)
def test_outside_the_subset_is_unparseable(text: str) -> None:
    assert isinstance(parse_command(text), Unparseable)


def test_digits_before_a_redirection_are_its_descriptor() -> None:
    parsed = parse_command("cmd 2>err a2>out")
    assert isinstance(parsed, Script)
    (command,) = parsed.commands
    assert [w.value for w in command.words] == ["cmd", "a2"]
    assert [(r.fd, r.op, r.target.value if r.target else r.dup) for r in command.redirects] == [
        ("2", ">", "err"),
        ("", ">", "out"),
    ]
    assert all(r.writes for r in command.redirects)


def test_assignments_only_before_the_command_name() -> None:
    parsed = parse_command("A=1 B='2' cmd C=3")
    assert isinstance(parsed, Script)
    (command,) = parsed.commands
    assert [w.value for w in command.assignments] == ["A=1", "B=2"]
    assert [w.value for w in command.words] == ["cmd", "C=3"]


@pytest.mark.parametrize(
    ("text", "hazard"),
    [
        ("bash script.sh", False),
        ("bash -x script.sh -c", False),
        ("bash", True),
        ("bash -", True),
        ("bash -o pipefail", True),
        ("zsh -ic ls", True),
        ("python3 script.py -c x", False),
        ("python3.11 -m mymodule -c x", False),
        ("python3.11 -m pytest -c x", True),
        ("python3 -Ic 'x'", True),
        ("python3 -", True),
        ("perl -ne 'print' f", True),
        ("node app.js", False),
        ("node --eval=1", True),
        ("deno eval 1", True),
        ("deno run x.ts", False),
        ("env", False),
        ("env FOO=1 ls", True),
        ("find . -name x", False),
        ("find . -execdir rm ';'", True),
        ("git commit -c HEAD", False),
        ("git --exec-path=/tmp status", True),
        ("rg --pre=x pattern", True),
        ("tar -Igzip -cf x.tgz .", True),
        ("vim +'!id' x", True),
        ("export A=1", True),
        ("busybox sh", True),
        ("timeout 5 ls", True),
        ("nohup ls", True),
        ("./run.sh", False),
    ],
)
def test_hazards(text: str, hazard: bool) -> None:
    parsed = parse_command(text)
    assert isinstance(parsed, Script), parsed
    (command,) = parsed.commands
    assert bool(command_hazards(command)) == hazard, command_hazards(command)


def test_program_of_drops_paths_and_versions() -> None:
    parsed = parse_command("/usr/bin/Python3.12 x")
    assert isinstance(parsed, Script)
    assert program_of(parsed.commands[0]) == "python"
