"""`mnemara note` writes the note and nothing else; the next search takes it in. Real
LanceDB, the built-in embedder and the default graph engine."""

from __future__ import annotations

from typer.testing import CliRunner

from panels.cli.main import app
from runtime.instance.home import InstancePaths
from runtime.memory.notes import FileNotes
from runtime.memory.pending import Pending

runner = CliRunner()


def mnemara(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_a_note_is_written_at_once_and_searchable_after_the_next_search(
    instance: InstancePaths,
) -> None:
    code, out, _ = mnemara("note", "-i", "t1", "INC-4821:", "the", "catalog", "cluster", "OOMs")
    [atom] = FileNotes(instance.memory).atoms()
    assert code == 0
    assert out == f"noted in {atom.source}; searchable after the next search or index\n"
    assert not (instance.root / "index").exists() and not instance.graph.exists()
    assert Pending(instance.memory).sources() == [atom.source]

    code, out, err = mnemara("memory", "search", "catalog cluster out of memory", "-i", "t1")
    assert code == 0 and atom.source in out
    assert err == "mnemara: indexing 1 new note written by `mnemara note` first\n"
    assert Pending(instance.memory).sources() == []
    code, out, _ = mnemara("memory", "graph", "query", "-i", "t1", "MATCH (n:Node) RETURN n.label")
    assert code == 0 and "memory_entry" in out


def test_a_wiki_note_names_its_page_too(instance: InstancePaths) -> None:
    code, out, _ = mnemara("note", "-i", "t1", "--category", "wiki/runbook", "restart", "it")
    assert code == 0 and "and wiki/runbook;" in out
    assert (instance.wiki / "runbook.md").read_text().rstrip().endswith("restart it")
    assert Pending(instance.memory).sources()[1:] == ["wiki/runbook"]
    code, _, err = mnemara("note", "-i", "t1", "--category", "wiki/../x", "text")
    assert code != 0 and "Traceback" not in err and len(FileNotes(instance.memory).atoms()) == 1


def test_a_queue_in_the_way_keeps_the_note_and_says_how_to_index_it(
    instance: InstancePaths,
) -> None:
    Pending(instance.memory).path.mkdir(parents=True)
    code, out, err = mnemara("note", "-i", "t1", "kept", "anyway")
    [atom] = FileNotes(instance.memory).atoms()
    assert (code, out) == (0, f"noted in {atom.source}\n")
    assert "not queued for the search index" in err and "`mnemara memory index -i t1`" in err
    code, _, err = mnemara("memory", "search", "kept", "-i", "t1")
    assert code == 1 and ".unindexed: not a regular file; move it out of the way" in err


def test_a_wiki_command_that_takes_the_lease_for_waiting_notes_indexes_them(
    instance: InstancePaths,
) -> None:
    assert mnemara("note", "-i", "t1", "v2.4.1", "went", "out")[0] == 0
    code, _, err = mnemara("memory", "wiki", "ls", "-i", "t1")
    assert code == 0 and "indexing 1 new note" in err
    assert Pending(instance.memory).sources() == []
    code, out, err = mnemara("memory", "search", "v2.4.1", "-i", "t1", "-k", "1")
    assert code == 0 and "words: v2.4.1" in out and err == ""
