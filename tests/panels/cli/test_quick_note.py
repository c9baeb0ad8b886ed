"""`mnemara note` read without click (panels/cli/quick.py) does what typer's reading does, and
leaves everything else to typer."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from panels.cli.main import app, run_cli
from panels.cli.quick import NoteArguments, note_arguments
from runtime.instance.home import InstancePaths
from runtime.memory.notes import FileNotes

PARSED = [
    (["note", "-i", "a", "hello", "world"], NoteArguments("a", ["hello", "world"], "note")),
    (["note", "hello", "--instance", "a"], NoteArguments("a", ["hello"], "note")),
    (["note", "--instance=a", "--category=ops", "x"], NoteArguments("a", ["x"], "ops")),
    (["note", "-ia", "--category", "wiki/run", "x"], NoteArguments("a", ["x"], "wiki/run")),
    (["note", "-i", "a", "-i", "b", "x"], NoteArguments("b", ["x"], "note")),  # last wins
    (
        ["note", "-i", "a", "--", "-h", "--category"],
        NoteArguments("a", ["-h", "--category"], "note"),
    ),
]
LEFT_TO_TYPER = [
    [],
    ["notes", "-i", "a", "x"],
    ["note"],
    ["note", "-i", "a"],  # no text
    ["note", "hello"],  # no instance
    ["note", "-h", "-i", "a", "x"],
    ["note", "-i", "a", "x", "--help"],
    ["note", "-i", "a", "--bogus", "x"],
    ["note", "-i", "--category", "x"],  # a value that looks like an option
    ["note", "-i", "a", "x", "--category"],  # an option without its value
    ["note", "-i", "a", "-", "x"],
    ["note", "--instance=", "x"],
]


@pytest.mark.parametrize(("argv", "expected"), PARSED)
def test_plain_note_commands_are_read_here(argv: list[str], expected: NoteArguments) -> None:
    assert note_arguments(argv) == expected


@pytest.mark.parametrize("argv", LEFT_TO_TYPER)
def test_anything_else_goes_through_typer(argv: list[str]) -> None:
    assert note_arguments(argv) is None


def run_quick(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as ended:
        run_cli(argv)
    out, err = capsys.readouterr()
    return int(ended.value.code or 0), out, err


@pytest.mark.parametrize(
    "argv",
    [
        ["note", "-i", "t1", "the", "loader", "is", "slow"],
        ["note", "-i", "t1", "--category", "wiki/runbook", "restart", "it"],
        ["note", "-i", "t1", "--category", "wiki/../x", "escape"],
        ["note", "-i", "ghost", "no", "such", "instance"],
    ],
    ids=["note", "wiki", "bad-page", "no-instance"],
)
def test_the_quick_path_answers_as_typer_does(
    argv: list[str], instance: InstancePaths, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert note_arguments(argv) is not None
    code, out, err = run_quick(argv, capsys)
    quick_notes = [(a.text, a.category) for a in FileNotes(instance.memory).atoms()]
    for path in instance.memory.glob("*.md"):
        path.unlink()
    typer_run = CliRunner().invoke(app, argv)
    typer_notes = [(a.text, a.category) for a in FileNotes(instance.memory).atoms()]
    assert (code, quick_notes) == (typer_run.exit_code, typer_notes)
    assert out.split("#")[0] == typer_run.stdout.split("#")[0]
    assert err == typer_run.stderr and "Traceback" not in err
