"""Risky options: a pattern that admits a program does not admit the options that load code."""

from __future__ import annotations

from pathlib import Path

import pytest

from runtime.instance.config import InstanceConfig, ToolPolicy
from runtime.policy.commands import program_of
from runtime.policy.options import (
    ALIASES,
    RISKY_OPTIONS,
    Grammar,
    risky_options,
    spelling_matches,
)
from runtime.policy.policy import PolicyState, decide
from runtime.policy.shell import Script, parse_command
from runtime.policy.writes import WRITERS
from tests.runtime.policy.conftest import Machine, build_machine

PROGRAMS = (
    "pytest", "py.test", "python3? -m pytest", "uv run pytest", "git", "mypy", "tox", "nox",
    "make", "npm", "yarn", "cargo", "go", "find", "tar", "rg", "scp", "uv", "poetry", "ninja",
    "pnpm",
)  # fmt: skip


@pytest.fixture
def admitting() -> PolicyState:
    """A user who allowed each of these programs with any arguments."""
    patterns = tuple(f"{program}( .*)?" for program in PROGRAMS)
    config = InstanceConfig(
        allowed_tools=(ToolPolicy(tool="Bash", mode="ask", allowed_patterns=patterns),)
    )
    return PolicyState.from_config(config)


RISKY = [
    ("pytest -p evil_plugin", "`pytest -p`"),
    ("pytest -pevil_plugin", "`pytest -p`"),
    ("pytest -qp evil_plugin", "`pytest -p`"),
    ("pytest -p no:cacheprovider", "`pytest -p`"),
    ("pytest --override-ini=addopts=-pevil", "`pytest --override-ini`"),
    ("pytest -o addopts=-pevil", "`pytest -o`"),
    ("pytest --config-file evil.ini", "`pytest --config-file`"),
    ("pytest -c evil.ini", "`pytest -c`"),
    ("pytest --confcutdir=/", "`pytest --confcutdir`"),
    ("pytest --rootdir=/tmp/x", "`pytest --rootdir`"),
    ("pytest --basetemp=src", "`pytest --basetemp`"),
    ("pytest --basetemp src", "`pytest --basetemp`"),
    ("pytest -W error::evil.Warning", "`pytest -W`"),
    ("pytest --pdbcls=evil:Debugger", "`pytest --pdbcls`"),
    ("pytest --tx popen//python=/tmp/py", "`pytest --tx`"),
    ("pytest @args.txt", "`pytest @file`"),
    ("py.test -p evil", "`pytest -p`"),
    ("python3 -m pytest -p evil", "`pytest -p`"),
    ("python -mpytest -p evil", "`pytest -p`"),
    ("uv run pytest -p evil", "`pytest -p`"),
    ("git -c core.pager=evil diff", "`git -c`"),
    ("git --config-env=core.pager=EVIL log", "`git --config-env`"),
    ("git --exec-path=/tmp log", "`git --exec-path`"),
    ("git -C /elsewhere push", "`git -C`"),
    ("git -C/elsewhere status", "`git -C`"),
    ("git --git-dir=/elsewhere/.git log", "`git --git-dir`"),
    ("git --work-tree /elsewhere add .", "`git --work-tree`"),
    ("uv --directory /elsewhere run task", "`uv --directory`"),
    ("uv run --project /elsewhere task", "`uv --project`"),
    ("poetry -C /elsewhere install", "`poetry -C`"),
    ("ninja -C /elsewhere", "`ninja -C`"),
    ("pnpm -C /elsewhere test", "`pnpm -C`"),
    ("git fetch --upload-pack=evil origin", "`git fetch --upload-pack`"),
    ("git fetch --upload-pack evil origin", "`git fetch --upload-pack`"),
    ("git fetch --upl=evil origin", "`git fetch --upload-pack`"),
    ("git clone -u evil repo", "`git clone -u`"),
    ("git ls-remote -uevil repo", "`git ls-remote -u`"),
    ("git push --receive-pack=evil origin", "`git push --receive-pack`"),
    ("git rebase -x make main", "`git rebase -x`"),
    ("git rebase -ix make main", "`git rebase -x`"),
    ("git rebase --exec=make main", "`git rebase --exec`"),
    ("git difftool --extcmd=evil", "`git difftool --extcmd`"),
    ("git grep -O evil pattern", "`git grep -O`"),
    ("git bisect run ./evil", "`git bisect run`"),
    ("git submodule foreach evil", "`git submodule foreach`"),
    ("git send-email --sendmail-cmd=evil x.patch", "`git send-email --sendmail-cmd`"),
    ("git config core.pager evil", "`git config`"),
    ("mypy --config-file evil.ini src", "`mypy --config-file`"),
    ("mypy --config=evil.ini src", "`mypy --config-file`"),
    ("mypy --python-executable /tmp/py src", "`mypy --python-executable`"),
    ("mypy --install-types src", "`mypy --install-types`"),
    ("tox -c evil.ini", "`tox -c`"),
    ("tox -x testenv.commands=evil", "`tox -x`"),
    ("tox --installpkg evil.whl", "`tox --installpkg`"),
    ("nox -f evil.py", "`nox -f`"),
    ("nox --noxfile=evil.py", "`nox --noxfile`"),
    ("make -f evil.mk", "`make -f`"),
    ("make -kf evil.mk", "`make -f`"),
    ("make --file=evil.mk", "`make --file`"),
    ("make --fi=evil.mk", "`make --file`"),
    ("make -C /tmp/evil", "`make -C`"),
    ("make SHELL=/tmp/evil test", "`make NAME=value`"),
    ("npm --prefix /tmp/evil test", "`npm --prefix`"),
    ("npm exec evil", "`npm exec`"),
    ("yarn --cwd /tmp/evil test", "`yarn --cwd`"),
    ("cargo --config build.rustc-wrapper=evil build", "`cargo --config`"),
    ("go test -exec=evil ./...", "`go -exec`"),
    ("go test --toolexec evil ./...", "`go -toolexec`"),
    ("find . -delete", "`find -delete`"),
    ("find . -execdir rm x ;", "`find -execdir`"),
    ("tar xIf evil a.tar", "`tar -I`"),
    ("rg --pre=evil pattern", "`rg --pre`"),
    ("scp -o ProxyCommand=evil a host:b", "`scp -o`"),
    ("scp -S ./evil a host:b", "`scp -S`"),
]


@pytest.mark.parametrize(("command", "named"), RISKY, ids=[c for c, _ in RISKY])
def test_risky_options_ask_whatever_the_pattern(
    machine: Machine, admitting: PolicyState, command: str, named: str
) -> None:
    verdict = decide(admitting, "Bash", {"command": command}, machine.ctx)
    assert verdict.action == "ask", verdict.reason
    assert named in verdict.reason
    assert verdict.remember == ()  # "always" is not offered


@pytest.mark.parametrize(
    "command",
    [
        "pytest",
        "pytest -q tests",
        "pytest -x -vv tests/unit",
        "pytest --pdb",
        "pytest --co -q",
        "pytest -k test_plugin",
        "pytest -ktest_p",
        "pytest -rA",
        "python3 -m pytest -q",
        "uv run pytest -q",
        "uv sync --locked",
        "ninja -j4",
        "git status",
        "git commit -c HEAD",
        "git log --oneline -5",
        "git fetch origin",
        "git config --get user.name",
        "git config user.name",
        "git send-email --to=me@example.com x.patch",
        "mypy src",
        "tox -e py311",
        "make test",
        "make -j4 test",
        "npm test",
        "cargo build --release",
        "go test ./...",
        "find . -name x",
        "tar -czf out.tgz src",
        "rg --pre-glob '*.gz' x",
        "scp -P 2222 -r src host:backup",
    ],
)
def test_ordinary_uses_stay_allowed(machine: Machine, admitting: PolicyState, command: str) -> None:
    verdict = decide(admitting, "Bash", {"command": command}, machine.ctx)
    assert verdict.action == "allow", verdict.reason


def test_hazards_ask_even_when_bash_is_allow(tmp_path: Path) -> None:
    machine = build_machine(tmp_path, bash_mode="allow")
    verdict = decide(machine.state, "Bash", {"command": "pytest -p evil"}, machine.ctx)
    assert verdict.action == "ask"


@pytest.mark.parametrize(
    ("spelling", "arg", "matches"),
    [
        ("-p", "-p", True),
        ("-p", "-pname", True),
        ("-p", "-qp", True),
        ("-p", "-kp", False),  # -k takes the rest of the cluster as its value
        ("-p", "--p", False),
        ("-p", "p", False),
        ("--plugin", "--plugin", True),
        ("--plugin", "--plugin=x", True),
        ("--plugin", "--plug=x", True),
        ("--plugin", "--plugins", False),
        ("--plugin", "-plugin", False),
        ("-exec", "-exec", True),
        ("-exec", "--exec=x", True),
        ("-exec", "-executable", False),
        ("+cmd", "+!id", True),
        ("@file", "@args", True),
        ("NAME=value", "CC=x", True),
        ("NAME=value", "--x=y", False),
        ("run", "run", True),
        ("run", "running", False),
    ],
)
def test_spellings(spelling: str, arg: str, matches: bool) -> None:
    grammar = Grammar(values=frozenset("k"))
    assert spelling_matches(spelling, arg, grammar) is matches


def test_abbreviations_only_where_the_program_takes_them() -> None:
    assert risky_options("pytest", ["--pdb"]) == []  # a real option, not short for --pdbcls
    assert risky_options("cargo", ["--conf=x"]) == []  # clap takes no abbreviations
    assert risky_options("tar", ["--checkpoint=10"]) == []
    assert risky_options("tar", ["--checkpoint-a=exec=id"]) != []


def test_every_entry_says_why() -> None:
    for program, table in RISKY_OPTIONS.items():
        for entry in table.risky:
            assert entry.spellings and entry.why, program


def test_every_table_key_is_a_name_program_of_returns() -> None:
    # program_of drops version digits (`bzip2` -> `bzip`): a key it never returns is dead.
    for key in (*RISKY_OPTIONS, *ALIASES, *WRITERS):
        parsed = parse_command(f"{key} x")
        assert isinstance(parsed, Script)
        assert program_of(parsed.commands[0]) == key
