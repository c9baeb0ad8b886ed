"""`mnemara memory archive` / `restore`: a note set aside leaves search at once, comes back
at once, and nothing is lost on the way. Real LanceDB and the built-in embedder."""

from __future__ import annotations

from datetime import UTC, datetime

from typer.testing import CliRunner

from panels.cli.main import app
from runtime.instance.home import InstancePaths
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
    for command in ("archive", "restore"):
        code, _, err = mnemara(command, "-i", "t1", note.source, " ")
        assert (code, err) == (2, "mnemara: a SOURCE is empty; search prints notes' sources\n")
    assert FileNotes(instance.memory).archived() == []


def test_help_says_how_to_undo() -> None:
    for command in ("archive", "restore"):
        code, out, _ = mnemara(command, "-h")
        assert code == 0 and "SOURCE..." in out and "SOURCE......" not in out
    replay_help = runner.invoke(app, ["replay", "-h"]).stdout
    assert "mnemara memory restore" in replay_help and "reconcile" in replay_help


def memory_entry(instance: InstancePaths, source: str) -> dict[str, object]:
    from runtime.memory.graph import open_graph

    graph = open_graph(instance.graph, read_only=True)
    try:
        [node] = graph.match("memory_entry", {"source_path": source}, limit=5)
        return node.properties
    finally:
        graph.close()


def test_replay_apply_brings_the_index_and_the_graph_along_and_restore_undoes_both(
    instance: InstancePaths,
) -> None:
    from runtime.instance.config import load_config
    from runtime.memory import open_memory

    texts = [
        "The API gateway rate limit is 500 requests per minute per client.",
        "The API gateway rate limit is 500 requests per minute for each client.",
        "The build host's disk fills up with old logs.",
    ]
    with open_memory(instance, load_config(instance.config)) as memory:
        written = [memory.remember(text) for text in texts]
    assert all(w.indexed and w.linked for w in written)
    query = "API gateway rate limit per client"
    before = mnemara("search", query, "-i", "t1", "-k", "3")[1]
    assert all(w.atom.source in before for w in written[:2])

    result = runner.invoke(app, ["replay", "-i", "t1", "--apply"])
    assert result.exit_code == 0, result.output
    [drop] = FileNotes(instance.memory).archived()
    assert "search index: 1 removed" in result.stdout
    assert "archived 1 note (" in result.stdout and "wrote 1 file (" in result.stdout
    assert "graph: 1 note node updated" in result.stdout
    assert drop not in mnemara("search", query, "-i", "t1", "-k", "3")[1]  # no `memory index`
    marked = memory_entry(instance, drop)
    assert str(marked["archived_reason"]) == "replay: near-duplicate" and marked["archived"]

    again = runner.invoke(app, ["replay", "-i", "t1", "--apply"])
    assert again.exit_code == 0 and "archived 0 notes" in again.stdout
    assert "search index:" not in again.stdout and "graph:" not in again.stdout

    code, out, _ = mnemara("restore", "-i", "t1", drop)
    assert code == 0 and "search index: 1 added" in out and "graph: 1 note node updated" in out
    assert "archived" not in memory_entry(instance, drop)
    assert drop in mnemara("search", query, "-i", "t1", "-k", "3")[1]
    kept = runner.invoke(app, ["replay", "-i", "t1", "--apply"])  # the restore holds
    assert kept.exit_code == 0 and "3 kept, 0 to archive" in kept.stdout
    assert FileNotes(instance.memory).archived() == []


def test_archive_by_hand_marks_the_graph_and_leaves_the_index(instance: InstancePaths) -> None:
    from runtime.instance.config import load_config
    from runtime.memory import open_memory

    with open_memory(instance, load_config(instance.config)) as memory:
        note = memory.remember("The catalog cluster costs $300 a month in us-east-1.").atom
    code, out, _ = mnemara("archive", "-i", "t1", note.source, "--reason", "moved to wiki")
    assert code == 0
    assert "search index: 1 removed" in out and "graph: 1 note node updated" in out
    assert memory_entry(instance, note.source)["archived_reason"] == "moved to wiki"
    code, out, _ = mnemara("archive", "-i", "t1", note.source)
    assert code == 0 and f"already archived: {note.source}" in out and "graph:" not in out
