"""One CLI: `-h` everywhere, plain placeholders, one spelling per noun, one exit-code table."""

from __future__ import annotations

import re
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from panels import errors as panel_errors
from panels.cli.errors import exit_code_for, exit_table, leaves, report, reports_errors
from panels.cli.main import app
from peerbus.errors import InvalidRoleError, PeerbusError
from runtime.errors import (
    ConfigError,
    CredentialsError,
    InstanceNotFoundError,
    MnemaraError,
    StoreCorruptError,
)
from runtime.instance.lease import InstanceLeasedError, LeaseOwner
from runtime.rehearsal.errors import ScriptError

runner = CliRunner()
TYPE_PLACEHOLDER = re.compile(
    r"<(bool|str|int|float|path|file|directory|text|integer|int range|float range|list\[.*?\])>"
)


def commands() -> list[tuple[list[str], Any]]:
    """(words, click command) for the app, every command and every group."""
    found: list[tuple[list[str], Any]] = []

    def walk(command: Any, words: list[str]) -> None:
        found.append((words, command))
        for name, sub in getattr(command, "commands", {}).items():
            walk(sub, [*words, name])

    walk(typer.main.get_command(app), [])
    return found


# `mnemara claude -h` is the bundled CLI's own help, passed through (see test_claude.py).
PATHS = [words for words, _ in commands() if words != ["claude"]]


@pytest.mark.parametrize("words", PATHS, ids=[" ".join(w) or "mnemara" for w in PATHS])
def test_dash_h_shows_plain_help(words: list[str]) -> None:
    short = runner.invoke(app, [*words, "-h"], prog_name="mnemara")
    long = runner.invoke(app, [*words, "--help"], prog_name="mnemara")
    assert short.exit_code == long.exit_code == 0, short.output
    assert short.stdout == long.stdout
    assert short.stdout.startswith(f"Usage: mnemara {' '.join(words)}".rstrip() + " ")
    assert "-h, --help" in short.stdout
    assert not TYPE_PLACEHOLDER.search(short.stdout), short.stdout
    assert "╭" not in short.stdout and "{" not in short.stdout.splitlines()[0]


def _options(command: Any) -> list[Any]:
    return [p for p in command.params if p.param_type_name == "option"]


SPELLINGS = {"team": ("--team", "-t"), "panel": ("--panel", "-p"), "instance": ("--instance", "-i")}


def test_nouns_have_one_spelling_everywhere() -> None:
    seen = dict.fromkeys(SPELLINGS, 0)
    for words, command in commands():
        where = " ".join(words)
        for option in _options(command):
            names = set(option.opts)
            if option.name in SPELLINGS:
                seen[option.name] += 1
                assert set(SPELLINGS[option.name]) <= names, f"{where}: {option.opts}"
                assert option.metavar == "NAME", f"{where}: {option.opts}"
            if option.is_flag:
                assert option.metavar is None, f"{where} {option.opts}"
            else:
                assert option.metavar, f"{where} {option.opts}: no placeholder"
            for old in ("--to", "--recipient"):
                # An old spelling is kept only beside the new one. `bus migrate --from
                # --to` names two buses, not a panel: the spelling its issue asked for.
                if old in names and words != ["bus", "migrate"]:
                    assert "--panel" in names, f"{where}: {old} alone"
            if "--role" in names and words[:1] == ["bus"]:
                assert "--panel" in names, f"{where}: --role alone"
    assert seen == {"team": 24, "panel": 17, "instance": 23}


def test_every_command_reports_its_errors() -> None:
    wrapper = reports_errors(lambda: None).__code__
    for words, command in commands():
        if command.callback is None or not words:
            continue
        func, codes = command.callback, []
        while func is not None:
            codes.append(func.__code__)
            func = getattr(func, "__wrapped__", None)
        assert wrapper in codes, " ".join(words)


# -- the exit-code table ------------------------------------------------------------------------

OWNER = LeaseOwner(1, "box", "trio", "the host of team 'trio'", 0.0)


@pytest.mark.parametrize(
    ("error", "code"),
    [
        (panel_errors.VerbError("answer: unknown"), 2),
        (panel_errors.WindowVerbError("no row 3"), 2),
        (panel_errors.TeamFileError.single("broken", path=None), 3),
        (ConfigError("bad", path=None), 3),
        (ScriptError("bad"), 3),
        (InstanceNotFoundError("no", instance="x"), 4),
        (InstanceLeasedError("in use", instance="x", owner=OWNER), 4),
        (StoreCorruptError("corrupt"), 5),
        (CredentialsError("no key"), 6),
        (InvalidRoleError(role="a b", field="sender"), 9),
        (panel_errors.NoHostError("never ran", team="t"), 10),
        (panel_errors.HostRunningError("running", team="t"), 10),
        (panel_errors.HostDbError("newer", path=__import__("pathlib").Path("h")), 10),
        (MnemaraError("other"), 1),
        (FileNotFoundError(2, "No such file or directory", "x"), 1),
        (RuntimeError("a bug"), 70),
    ],
)
def test_errors_map_to_codes_by_class(error: BaseException, code: int) -> None:
    assert exit_code_for(error) == code


def test_no_row_of_the_table_is_hidden_by_a_broader_row_above_it() -> None:
    table = exit_table()
    for i, (cls, code) in enumerate(table):
        for broader, other in table[:i]:
            assert not (issubclass(cls, broader) and code != other), (cls, broader)


def test_the_panels_tree_has_one_root_and_each_class_is_defined_once() -> None:
    from panels.host import errors as host_errors
    from panels.host.turns import window
    from panels.hostdb import schema, verbs
    from panels.team import errors as team_errors

    assert issubclass(panel_errors.PanelsError, MnemaraError)
    for name in ("HostError", "HostRunningError", "NoHostError"):
        assert getattr(host_errors, name) is getattr(panel_errors, name)
    assert team_errors.TeamFileError is panel_errors.TeamFileError
    assert schema.HostDbError is panel_errors.HostDbError
    assert verbs.VerbError is panel_errors.VerbError
    assert window.WindowVerbError is panel_errors.WindowVerbError
    for cls in (
        panel_errors.HostError,
        panel_errors.HostDbError,
        panel_errors.TeamFileError,
        panel_errors.VerbError,
        panel_errors.WindowVerbError,
    ):
        assert issubclass(cls, panel_errors.PanelsError) and cls.__name__ in panel_errors.__doc__
    assert issubclass(panel_errors.TeamFileError, ConfigError)
    assert issubclass(panel_errors.VerbError, ValueError)


# -- exception groups ---------------------------------------------------------------------------


def test_one_of_our_errors_inside_a_group_is_reported_like_the_bare_error(
    capsys: pytest.CaptureFixture[str],
) -> None:
    error = InstanceLeasedError("instance 'x' is in use", instance="x", owner=OWNER)
    nested = BaseExceptionGroup("outer", [ExceptionGroup("inner", [error])])
    assert leaves(nested) == [error]
    assert report(nested) == 4
    group_err = capsys.readouterr().err
    assert report(error) == 4
    assert capsys.readouterr().err == group_err == "mnemara: instance 'x' is in use\n"


def test_a_group_says_each_failure_once_and_ctrl_c_wins(
    capsys: pytest.CaptureFixture[str],
) -> None:
    same = [ConfigError("bad", path=None), ConfigError("bad", path=None)]
    assert report(ExceptionGroup("g", [*same, PeerbusError("bus gone")])) == 3
    assert capsys.readouterr().err == "mnemara: config: bad\nmnemara: bus gone\n"
    assert report(BaseExceptionGroup("g", [ConfigError("x"), KeyboardInterrupt()])) == 130


def test_an_unexpected_error_is_a_bug_report_not_a_traceback(
    capsys: pytest.CaptureFixture[str], tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)
    assert report(ExceptionGroup("g", [ZeroDivisionError("division by zero")])) == 70
    err = capsys.readouterr().err
    assert err.startswith("mnemara: unexpected error (ZeroDivisionError: division by zero);")
    assert "Traceback" not in err and "ExceptionGroup" not in err and "this is a bug" in err
    (crash,) = tmp_path.glob("mnemara-crash-*.log")
    assert "ZeroDivisionError" in crash.read_text()


def test_a_command_that_raises_inside_a_task_group_exits_with_the_errors_code() -> None:
    import anyio

    @reports_errors
    def command() -> None:
        async def main() -> None:
            async with anyio.create_task_group() as tg:
                tg.start_soon(anyio.sleep, 10)
                raise CredentialsError("no credentials; set ANTHROPIC_API_KEY")

        anyio.run(main, backend="trio")

    cli = typer.Typer()
    cli.command()(command)
    result = runner.invoke(cli, [])
    assert result.exit_code == 6
    assert result.stderr == "mnemara: no credentials; set ANTHROPIC_API_KEY\n"
