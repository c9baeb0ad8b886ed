"""The README's command table, verbs and exit codes agree with the CLI; it points nowhere else."""

from __future__ import annotations

import re
from pathlib import Path

import typer

from panels.cli import errors
from panels.cli.main import app
from panels.hostdb.verbs import verbs

ROOT = Path(__file__).resolve().parents[3]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def section(title: str) -> str:
    start = README.index(f"### {title}\n")
    end = README.find("\n##", start + 4)
    return README[start : end if end > 0 else None]


def test_the_first_two_commands_stay() -> None:
    block = README.split("```sh\n", 1)[1].split("```", 1)[0].splitlines()
    assert block[0].startswith("make setup && .venv/bin/mnemara demo ")
    assert block[1].startswith("make check ")


def test_nothing_points_outside_the_repository() -> None:
    assert "../" not in README
    # No absolute path of some machine (URLs and `~/...` and `<instance>/...` are fine).
    absolute = re.findall(r"(?<![\w:/.~<>-])/[\w.-]+/[\w.-]+", README)
    assert absolute == [], absolute
    for target in re.findall(r"\]\(([^)]+)\)", README):
        assert target.startswith("#"), f"a link out of the README: {target}"
    for name in re.findall(r"`((?:examples|panels|runtime|peerbus|bench)/[\w./*-]+)`", README):
        if "*" not in name:
            assert (ROOT / name).exists(), name


def test_the_command_table_names_every_command_and_verb() -> None:
    table = section("Commands")
    root = typer.main.get_command(app)
    for name, command in root.commands.items():  # type: ignore[attr-defined]
        if hasattr(command, "commands"):
            for sub in command.commands:
                assert f"`mnemara {name} {sub} " in table, f"{name} {sub}"
        else:
            assert re.search(rf"`(mnemara )?{name}[` ]", table), name
    for verb in verbs():
        assert f"`{verb}`" in table, verb


def test_the_exit_code_table_is_the_clis() -> None:
    table = section("Exit codes")
    documented = {int(code) for code in re.findall(r"^\| (\d+) \|", table, re.M)}
    used = {code for _, code in errors.exit_table()}
    constants = {v for k, v in vars(errors).items() if k.startswith("EXIT_")}
    assert used <= documented and constants | {0} == documented
    in_docstring = {int(c) for c in re.findall(r"^    (\d+) ", errors.__doc__ or "", re.M)}
    assert in_docstring == documented
