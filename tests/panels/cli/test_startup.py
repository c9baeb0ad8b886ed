"""`mnemara` starts light: what importing the CLI and printing help may load, and that the
lazily built tree (panels/cli/lazy.py) is the one typer builds.

Speed itself is measured by bench/cli_startup.py, not here.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import typer

from panels.cli.lazy import lazy_command
from panels.cli.main import app, run_cli

# Modules whose import cost is what start-up must not pay: the SDK, SQLite and its async
# wrapper, PostgreSQL's driver, the dashboard toolkit, rich, memory engines, HTTP, async
# runtimes, validation.
HEAVY = (
    "claude_agent_sdk",
    "aiosqlite",
    "sqlite3",
    "_sqlite3",
    "psycopg",
    "textual",
    "rich",
    "lancedb",
    "ladybug",
    "kuzu",
    "httpx",
    "anyio",
    "asyncio",
    "trio",
    "pydantic",
    "pydantic_core",
)
SCRIPT = Path(sys.executable).parent / "mnemara"  # the console script a user runs


def paths() -> list[list[str]]:
    """Every command and group, read from typer's own (eager) build of the app."""
    found: list[list[str]] = []

    def walk(command: Any, words: list[str]) -> None:
        for name, sub in command.commands.items():
            found.append([*words, name])
            if hasattr(sub, "commands"):
                walk(sub, [*words, name])

    walk(typer.main.get_command(app), [])
    return found


# `mnemara claude -h` is the bundled CLI's own help, passed through (see test_claude.py).
OURS = [words for words in paths() if words != ["claude"]]


def heavy_loaded(code: str) -> list[str]:
    """Run `code` in a fresh interpreter; the HEAVY modules (or their submodules) it loaded."""
    probe = f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)), file=sys.stderr)"
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True
    )
    loaded = json.loads(done.stderr.strip().splitlines()[-1])
    return sorted({m for m in loaded if m.split(".")[0] in HEAVY})


def test_importing_the_cli_loads_nothing_heavy() -> None:
    assert heavy_loaded("import panels.cli.main") == []


def test_every_help_loads_nothing_heavy() -> None:
    """Help for the app, a bare `mnemara`, and every command and group, in one process."""
    runs = [["--help"], [], *([*words, "--help"] for words in OURS)]
    code = (
        "import contextlib, io\n"
        "from panels.cli.main import run_cli\n"
        f"for args in {runs!r}:\n"
        "    with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):\n"
        "        run_cli(args)\n"
    )
    assert heavy_loaded(code) == []


def test_help_lists_every_command() -> None:
    """The installed script's `--help` names each registered command with its help line."""
    done = subprocess.run(
        [str(SCRIPT), "--help"], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    listing = done.stdout.split("\nCommands:\n", 1)[1]
    rows = dict(re.findall(r"^  (\S+) +(.+)$", listing, re.MULTILINE))
    root = typer.main.get_command(app)
    assert list(rows) == list(root.commands)  # type: ignore[attr-defined]
    for name, command in root.commands.items():  # type: ignore[attr-defined]
        first_words = " ".join(command.get_short_help_str(200).split()[:3])
        assert rows[name].startswith(first_words), (name, rows[name])


def printed(main: Any, args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[Any, str]:
    """Exit code and stdout+stderr of one in-process run of `main(args)`."""
    with pytest.raises(SystemExit) as exited:
        main(args)
    seen = capsys.readouterr()
    return exited.value.code, seen.out + seen.err


def eager(args: list[str]) -> None:
    """The app as typer builds it whole: every command turned into a click command."""
    typer.main.get_command(app)(args, prog_name="mnemara")


@pytest.mark.parametrize("words", [[], *OURS], ids=["mnemara", *(" ".join(w) for w in OURS)])
def test_lazy_help_is_typers_help(words: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    """What the script prints (run_cli builds lazily) is what typer's full build prints."""
    typers = printed(eager, [*words, "--help"], capsys)
    assert printed(run_cli, [*words, "--help"], capsys) == typers
    assert typers[0] == 0 and typers[1].startswith(f"Usage: mnemara {' '.join(words)}".rstrip())


@pytest.mark.parametrize(
    "args",
    [
        [],
        ["nosuchcmd"],
        ["buss"],
        ["bus", "nosuchcmd"],
        ["memory", "wiki"],
        ["memory", "wiki", "lss"],
        ["run", "-i", "x", "--sandbox", "maybe"],
    ],
)
def test_bad_usage_is_one_message_and_exit_2(
    args: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    typers = printed(eager, args, capsys)
    assert printed(run_cli, args, capsys) == typers
    assert typers[0] == 2 and "Traceback" not in typers[1]


def test_a_run_builds_only_the_commands_it_names(capsys: pytest.CaptureFixture[str]) -> None:
    """Help lists every command from stand-ins; `bus send -h` builds bus and send alone."""
    root = lazy_command(app)
    assert printed(root, ["--help"], capsys)[0] == 0
    assert root.commands.built() == []
    assert printed(root, ["bus", "send", "--help"], capsys)[0] == 0
    assert root.commands.built() == ["bus"]
    assert root.commands["bus"].commands.built() == ["send"]


def test_the_script_builds_only_the_command_it_runs(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """run_cli, the console script's entry, turns one function into a command, not all."""
    built: list[str | None] = []
    real = typer.main.get_command_from_info

    def counting(command_info: Any, **kwargs: Any) -> Any:
        command = real(command_info, **kwargs)
        built.append(command.name)
        return command

    monkeypatch.setattr(typer.main, "get_command_from_info", counting)
    monkeypatch.setattr("panels.cli.lazy.get_command_from_info", counting)
    assert printed(run_cli, ["bus", "send", "--help"], capsys)[0] == 0
    assert built == ["send"]
