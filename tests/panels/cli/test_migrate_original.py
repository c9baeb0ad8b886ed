"""`mnemara migrate` on an original mnemara instance: what it converts, keeps and says.

The instance is the original's (tests/originals.py). The migration keeps a backup of the turn
store, makes the original's markers our markers (no row the model sees), parses the list the
original wrote as Python text, carries the graph nodes and edges its agent added by hand into
the default engine with their ids and properties, says all of it, and leaves the original's
notes and Kuzu graph byte for byte as they were.
"""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from panels.cli.main import app
from runtime.store import TurnStore
from tests.originals import digest, make_original_instance

runner = CliRunner()


def test_migrate_carries_markers_and_the_hand_made_graph_and_says_so(mnemara_home: Path) -> None:
    paths = make_original_instance(mnemara_home, rag_enabled=False)  # search: not this test's
    original_turns = paths.turns.read_bytes()
    before = digest(paths.root)

    result = runner.invoke(app, ["migrate", "--instance", "old"])
    assert result.exit_code == 0, result.stderr
    out = result.stdout
    backup = paths.root / "turns.sqlite.original.bak"
    assert (
        f"old: {paths.turns}: converted 5 rows and 2 markers from the original mnemara format "
        f"to schema v3; original kept at {backup}"
    ) in out
    assert (
        "old:   marker 'refactor' (original row 2) superseded by its later mark (original row 7)"
    ) in out
    assert (
        "old: graph: carried over from the original's Kuzu graph what notes and wiki do not "
        "give: 3 nodes (decision 1, entity 1, person 1) and 3 edges (about 1, decided 1, uses 1)"
        ", ids kept; 3 nodes and 2 edges of it come from notes and wiki"
    ) in out
    assert backup.read_bytes() == original_turns

    # The original's notes, wiki and graph are as they were; only the store was converted.
    after = digest(paths.root)
    unchanged = {"graph/kuzu_db", "memory/2026-11-20.md", "wiki/replay_policy.md", "config.json"}
    assert {name: after[name] for name in unchanged} == {name: before[name] for name in unchanged}

    with TurnStore.open_read_only(paths.turns) as store:
        assert [row.role for row in store.rows()] == ["user", "assistant", "system", "user",
                                                      "assistant"]  # fmt: skip
        assert [(m.name, m.after_row_id) for m in store.markers()] == [
            ("review", 4), ("refactor", 6)
        ]  # fmt: skip

    def query(cypher: str) -> list[list[object]]:
        done = runner.invoke(app, ["memory", "graph", "query", cypher, "-i", "old", "--json"])
        assert done.exit_code == 0, done.stderr
        data = json.loads(done.stdout)
        return [[row[c] for c in data["columns"]] for row in data["rows"]]

    assert query("MATCH (n:Node {id: 'p-ada'}) RETURN n.label, n.properties") == [
        ["person", '{"name": "Ada", "roles": ["lead", "reviewer"]}']
    ]
    refs = query("MATCH (n:Node) WHERE n.label = 'entity' RETURN n.properties ORDER BY n.id")
    assert sorted(json.loads(str(p))["ref"] for [p] in refs) == ["cache", "reads", "writes"]
    edges = query(
        "MATCH (a:Node)-[e:Edge]->(b:Node) WHERE e.relationship IN ['decided', 'about', 'uses'] "
        "RETURN a.label, e.relationship, b.properties ORDER BY e.relationship"
    )
    # The ends the rebuild made (the `reads` entity) are ours, found by their ref.
    assert [(a, rel, json.loads(str(b)).get("ref")) for a, rel, b in edges] == [
        ("decision", "about", "reads"), ("person", "decided", None), ("entity", "uses", "cache")
    ]  # fmt: skip

    again = runner.invoke(app, ["migrate", "--instance", "old"])
    assert again.exit_code == 0, again.stderr
    assert "already at schema v3" in again.stdout
    assert "graph: all of the original's Kuzu graph is in ours (6 nodes and 5 edges)" in (
        again.stdout
    )
