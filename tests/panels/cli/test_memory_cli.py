"""`mnemara memory ...` on a real instance in tmp: real LanceDB, the built-in embedder, ladybug.

The sub-app is mounted on a Typer of the test's own, as panels/cli/main.py mounts it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from panels.cli.memory import memory_app
from runtime.instance.home import InstancePaths
from runtime.instance.lease import LeaseOwner, acquire_lease
from runtime.memory.fake import FakeEmbedder
from runtime.memory.lance import open_lance_index
from runtime.memory.notes import FileNotes
from runtime.memory.wiki import FileWiki, page_atom

app = typer.Typer()
app.add_typer(memory_app, name="memory")
runner = CliRunner()


def mnemara(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, ["memory", *args])
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def filled(instance: InstancePaths) -> InstancePaths:
    """Instance `t1` with three notes and two wiki pages."""
    notes = FileNotes(instance.memory)
    when = datetime(2026, 11, 20, 9, 0, tzinfo=UTC)
    notes.append("The deploy failed because the disk was full.", "incident", now=when)
    notes.append(
        "Loader retries hide a missing index.", "insight", {"applies_to": ["loader"]}, now=when
    )
    notes.append("Evil \x1b[2J\x1b[31mred text\x1b[0m here", "note", now=when)
    wiki = FileWiki(instance.wiki)
    wiki.write("deploy/checklist", "---\ntags: [deploy, ops]\n---\nCheck free disk space first.")
    wiki.write("cooking", "Pasta needs salted water.")
    return instance


def test_every_command_has_help() -> None:
    for command in (
        [],
        ["search"],
        ["index"],
        ["reindex"],
        ["wiki"],
        ["wiki", "ls"],
        ["wiki", "show"],
        ["graph"],
        ["graph", "query"],
        ["graph", "rebuild"],
    ):
        code, out, _ = mnemara(*command, "-h")
        assert code == 0 and "Usage:" in out, command
        assert "Show this message and exit" in out
    assert "--instance" in mnemara("search", "-h")[1]
    assert "note|wiki" in mnemara("search", "-h")[1]


def test_search_on_an_empty_index_says_how_to_fill_it(instance: InstancePaths) -> None:
    code, out, _ = mnemara("search", "disk", "--instance", "t1")
    assert code == 0 and "the search index is empty" in out and "memory index" in out
    code, out, _ = mnemara("search", "disk", "--instance", "t1", "--json")
    assert code == 0 and json.loads(out) == []


def test_index_then_search(filled: InstancePaths) -> None:
    code, out, _ = mnemara("index", "--instance", "t1")
    assert code == 0 and out.strip() == "5 added, 0 updated, 0 removed, 0 unchanged"
    code, out, _ = mnemara("index", "--instance", "t1")
    assert code == 0 and out.strip() == "0 added, 0 updated, 0 removed, 5 unchanged"

    code, out, _ = mnemara("search", "disk full during deploy", "--instance", "t1", "-k", "2")
    assert code == 0
    lines = out.splitlines()
    assert len(lines) == 2
    score, kind, source = lines[0].split()[:3]
    assert len(score.split(".")[1]) == 3 and 0 < float(score) <= 1
    assert kind == "note" and source.startswith("memory/2026-11-20.md#")
    assert "The deploy failed because the disk was full." in lines[0]

    code, out, _ = mnemara("search", "deploy", "--instance", "t1", "--kind", "wiki", "--json")
    hits = json.loads(out)
    assert code == 0 and {hit["kind"] for hit in hits} == {"wiki"}
    assert set(hits[0]) == {"source", "kind", "category", "score", "matched", "text"}
    assert hits[0]["source"] == "wiki/deploy/checklist"
    assert hits[0]["score"] == round(hits[0]["score"], 3)


def test_search_escapes_control_characters(filled: InstancePaths) -> None:
    assert mnemara("index", "--instance", "t1")[0] == 0
    code, out, _ = mnemara("search", "red text", "--instance", "t1", "-k", "5")
    assert code == 0 and "\x1b" not in out
    assert "Evil \\x1b[2J\\x1b[31mred text\\x1b[0m here" in out


def test_search_refuses_bad_input(filled: InstancePaths) -> None:
    code, _, err = mnemara("search", "x", "--instance", "t1", "--kind", "manualish")
    assert code == 2 and "--kind must be one of note, wiki" in err
    code, _, err = mnemara("search", "x", "--instance", "t1", "-k", "0")
    assert code == 2
    code, _, err = mnemara("search", "x", "--instance", "nobody")
    assert code == 4 and "no instance 'nobody'" in err


def test_a_stale_index_names_reindex_and_reindex_fixes_it(filled: InstancePaths) -> None:
    # An index built by another embedder, as after a change of rag_embed_url / model.
    stale = open_lance_index(filled.index, FakeEmbedder())
    stale.upsert([page_atom("cooking", "Pasta needs salted water.")])
    stale.close()
    code, _, err = mnemara("search", "disk", "--instance", "t1")
    assert code == 1 and "mnemara memory reindex" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
    code, _, err = mnemara("index", "--instance", "t1")
    assert code == 1 and "reindex" in err
    code, out, _ = mnemara("reindex", "--instance", "t1")
    assert code == 0 and out.strip() == "reindexed: 5 atoms embedded"
    code, out, _ = mnemara("search", "disk", "--instance", "t1", "--json")
    assert code == 0 and len(json.loads(out)) == 5


def test_writing_commands_refuse_a_leased_instance(filled: InstancePaths) -> None:
    owner = LeaseOwner.this_process("the host of team 'trio'", team="trio")
    with acquire_lease(filled, owner):
        for command in (["index"], ["reindex"], ["graph", "rebuild"]):
            code, _, err = mnemara(*command, "--instance", "t1")
            assert code == 4 and "in use by the host of team 'trio'" in err, command
        # Reading the wiki, searching and querying the graph (read-only) need no lease.
        code, out, _ = mnemara("graph", "query", "MATCH (n) RETURN n.id", "--instance", "t1")
        assert code == 0, out
        assert mnemara("wiki", "ls", "--instance", "t1")[0] == 0
        assert mnemara("search", "disk", "--instance", "t1")[0] == 0


def test_wiki_ls_and_show(filled: InstancePaths) -> None:
    code, out, _ = mnemara("wiki", "ls", "--instance", "t1")
    assert code == 0 and out.splitlines() == ["cooking", "deploy/checklist"]
    code, out, _ = mnemara("wiki", "ls", "deploy", "--instance", "t1", "--json")
    assert code == 0 and json.loads(out) == ["deploy/checklist"]
    code, out, _ = mnemara("wiki", "ls", "nothing-here", "--instance", "t1")
    assert code == 0 and "(no wiki pages under 'nothing-here')" in out
    code, out, _ = mnemara("wiki", "show", "deploy/checklist", "--instance", "t1")
    assert code == 0 and out == "---\ntags: [deploy, ops]\n---\nCheck free disk space first.\n"


def test_wiki_show_refuses_unknown_pages_and_bad_slugs(filled: InstancePaths) -> None:
    code, _, err = mnemara("wiki", "show", "no-such-page", "--instance", "t1")
    assert code == 2 and "no wiki page 'no-such-page'" in err and "wiki ls" in err
    code, _, err = mnemara("wiki", "show", "Bad_Slug", "--instance", "t1")
    assert code == 1 and "wiki page 'Bad_Slug'" in err and "try 'bad-slug'" in err
    code, _, err = mnemara("wiki", "show", "../../config", "--instance", "t1")
    assert code == 1 and "wiki page" in err and "Traceback" not in err


def test_wiki_show_escapes_control_characters(filled: InstancePaths) -> None:
    (filled.wiki / "evil.md").write_text("line one\n\x1b]0;pwned\x07\tend\r\n", encoding="utf-8")
    code, out, _ = mnemara("wiki", "show", "evil", "--instance", "t1")
    assert code == 0 and out == "line one\n\\x1b]0;pwned\\x07    end\n"


def test_graph_rebuild_and_query(filled: InstancePaths) -> None:
    code, out, _ = mnemara("graph", "rebuild", "--instance", "t1")
    # 3 notes + 2 pages + entity loader + tags deploy, ops; edges: applies_to + 2 tagged
    assert code == 0 and out.strip() == (
        "graph rebuilt from 3 notes and 2 wiki pages: 8 nodes, 3 edges"
    )
    assert mnemara("graph", "rebuild", "--instance", "t1")[1] == out  # a rebuild, not a merge
    cypher = "MATCH (n:Node) RETURN n.label AS label, count(*) AS c ORDER BY label"
    code, out, _ = mnemara("graph", "query", cypher, "--instance", "t1", "--json")
    assert code == 0 and json.loads(out) == {
        "columns": ["label", "c"],
        "rows": [
            {"label": "entity", "c": 1},
            {"label": "memory_entry", "c": 3},
            {"label": "topic_tag", "c": 2},
            {"label": "wiki_page", "c": 2},
        ],
    }
    code, out, _ = mnemara("graph", "query", cypher, "--instance", "t1")
    assert code == 0 and out.splitlines()[:2] == ["label\tc", "entity\t1"]
    code, out, _ = mnemara(
        "graph", "query", "MATCH (n:Node) WHERE n.id = 'none' RETURN n.id", "--instance", "t1"
    )
    assert code == 0 and out.splitlines()[-1] == "(no rows)"


@pytest.mark.parametrize(
    "cypher", ["CREATE (n:Node {id: 'x'})", "MATCH (n) DETACH DELETE n", "CALL db_drop()"]
)
def test_graph_query_refuses_writes(filled: InstancePaths, cypher: str) -> None:
    code, _, err = mnemara("graph", "query", cypher, "--instance", "t1")
    assert code == 8 and "graph query refused" in err
    assert len(err.strip().splitlines()) == 1
    assert not (filled.graph / "lbug_db").exists()  # refused before anything was opened


def test_engine_switched_off_is_one_line(
    filled: InstancePaths, configure: Callable[..., object]
) -> None:
    configure(graph_enabled=False, rag_enabled=False)
    for command in (
        ["search", "disk"],
        ["index"],
        ["reindex"],
        ["graph", "rebuild"],
        ["graph", "query", "MATCH (n) RETURN n"],
    ):
        code, _, err = mnemara(*command, "--instance", "t1")
        assert code == 1 and err.count("\n") == 1 and " is off (" in err, command


def test_graph_rebuild_sets_a_corrupt_graph_aside(filled: InstancePaths) -> None:
    filled.graph.mkdir()
    (filled.graph / "lbug_db").write_bytes(b"not a database" * 100)
    code, _, err = mnemara("graph", "query", "MATCH (n) RETURN n.id", "--instance", "t1")
    assert code == 1 and err.count("\n") == 1
    assert "cannot open lbug_db" in err and "graph rebuild" in err
    code, out, err = mnemara("graph", "rebuild", "--instance", "t1")
    assert code == 0 and out.endswith("8 nodes, 3 edges\n")
    assert "set the unreadable graph aside as" in err
    (kept,) = filled.graph.glob("lbug_db.broken-*")
    assert kept.read_bytes() == b"not a database" * 100


def test_quarantine_lists_and_releases_a_teams_held_turns(mnemara_home: Path) -> None:
    from runtime.memory.model import Provenance
    from runtime.memory.quarantine import Quarantine

    code, _, err = mnemara("quarantine", "-t", "crew")
    assert code == 10 and "team 'crew' has no state" in err
    (mnemara_home / "_teams" / "crew").mkdir(parents=True)
    ledger = Quarantine(mnemara_home / "_teams" / "crew" / "memory" / "quarantine.jsonl")
    assert mnemara("quarantine", "-t", "crew") == (0, "team 'crew': nothing quarantined\n", "")
    ledger.add(Provenance("eng", 2, 41), "sentinel: repeat")
    code, out, _ = mnemara("quarantine", "-t", "crew", "--json")
    assert code == 0 and json.loads(out)[0]["turn"] == "eng:2:41"
    code, _, err = mnemara("quarantine", "-t", "crew", "--release", "eng:2")
    assert code == 2 and "PANEL:EPOCH:TURN" in err
    code, _, err = mnemara("quarantine", "-t", "crew", "--release", "eng:2:40")
    assert code == 2 and "not quarantined" in err
    code, out, _ = mnemara("quarantine", "-t", "crew", "--release", "eng:2:41")
    assert code == 0 and "released eng:2:41" in out
    assert ledger.entries() == []


WRITER = """
import sys
from pathlib import Path
from runtime.memory.graph import open_graph
graph = open_graph(Path(sys.argv[1]), "ladybug")
graph.add_node("svc", {"name": "api"}, "api")
print("ready", flush=True)
sys.stdin.read()
graph.close()
"""


def test_graph_query_reads_beside_a_process_holding_the_graph(instance: InstancePaths) -> None:
    import subprocess
    import sys

    with subprocess.Popen(
        [sys.executable, "-c", WRITER, str(instance.root / "graph")],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    ) as writer:  # fmt: skip
        assert writer.stdout is not None and writer.stdin is not None
        try:
            assert writer.stdout.readline().strip() == "ready"
            code, out, err = mnemara("graph", "query", "MATCH (n:Node) RETURN n.id", "-i", "t1")
            assert (code, err) == (0, "") and out.splitlines() == ["n.id", "api"]
        finally:
            writer.stdin.close()
            writer.wait(timeout=30)
