"""`mnemara memory archive` / `restore`: a note set aside leaves search at once, comes back
at once, and nothing is lost on the way. Real LanceDB and the built-in embedder."""

from __future__ import annotations

from datetime import UTC, datetime

from typer.testing import CliRunner

from panels.cli.main import app
from runtime.home import InstancePaths
from runtime.memory.notes import FileNotes

runner = CliRunner()


def mnemara(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, ["memory", *args])
    return result.exit_code, result.stdout, result.stderr


def test_an_archived_note_leaves_search_at_once_and_a_restored_one_returns(
    instance: InstancePaths,
) -> None:
    notes = FileNotes(instance.memory)
    when = datetime(2026, 11, 20, 9, 0, tzinfo=UTC)
    cost = notes.append("The catalog cluster costs $300 a month in us-east-1.", now=when)
    notes.append("The build host's disk fills up with old logs.", now=when)
    assert mnemara("index", "-i", "t1")[0] == 0
    query = "what does the catalog cluster cost"
    assert cost.source in mnemara("search", query, "-i", "t1", "-k", "1")[1]

    code, out, _ = mnemara("archive", "-i", "t1", cost.source, "--reason", "out of date")
    assert code == 0
    assert f"archived: {cost.source}" in out
    assert f"undo with: mnemara memory restore -i t1 {cost.source}" in out
    assert cost.source not in mnemara("search", query, "-i", "t1")[1]  # no reindex needed
    code, out, _ = mnemara("restore", "-i", "t1")
    assert (code, out) == (
        0,
        f"{cost.source}\n1 archived note; restore with: mnemara memory restore -i t1 SOURCE...\n",
    )

    assert mnemara("index", "-i", "t1")[0] == 0  # the sync drops the archived row
    code, out, _ = mnemara("restore", "-i", "t1", cost.source)
    assert code == 0 and f"restored: {cost.source}" in out and "search index:" in out
    assert cost.source in mnemara("search", query, "-i", "t1", "-k", "1")[1]
    assert mnemara("restore", "-i", "t1")[1] == "0 archived notes\n"


def test_unknown_notes_are_refused_by_name(instance: InstancePaths) -> None:
    note = FileNotes(instance.memory).append("A note.")
    code, _, err = mnemara("archive", "-i", "t1", "memory/2026-01-01.md#000000000000")
    assert code == 2 and "no note memory/2026-01-01.md#000000000000 in t1" in err
    code, _, err = mnemara("restore", "-i", "t1", note.source)
    assert code == 2 and f"{note.source} is not archived in t1" in err
    code, _, err = mnemara("archive", "-i", "t1")
    assert code == 2 and "Missing argument 'SOURCE'" in err
    assert FileNotes(instance.memory).archived() == []


def test_help_says_how_to_undo() -> None:
    for command in ("archive", "restore"):
        code, out, _ = mnemara(command, "-h")
        assert code == 0 and "SOURCE..." in out and "SOURCE......" not in out
    replay_help = runner.invoke(app, ["replay", "-h"]).stdout
    assert "mnemara memory restore" in replay_help and "reconcile" in replay_help
