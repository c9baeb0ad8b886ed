"""The GraphStore contract, run on the fake, on ladybug in this process, and on kuzu in another.

ladybug and kuzu crash when both are loaded in one process, so the kuzu run is this same file
run again by `test_kuzu_in_its_own_process` in a child pytest, with GRAPH_ENGINE_ENV=kuzu
selecting only the kuzu backend there. The parent never imports kuzu.
"""

from __future__ import annotations

import importlib.util
import itertools
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from runtime.errors import MemoryStoreError, PolicyError
from runtime.memory.linking import (
    applies_to,
    front_matter_tags,
    link_note,
    link_page,
    rebuild_graph,
)
from runtime.memory.model import Atom, GraphNode, Provenance
from runtime.memory.protocols import GraphStore

GRAPH_ENGINE_ENV = "MNEMARA_TEST_GRAPH_ENGINE"
IN_KUZU_CHILD = os.environ.get(GRAPH_ENGINE_ENV) == "kuzu"
BACKENDS = ["kuzu"] if IN_KUZU_CHILD else ["fake", "ladybug"]

HOSTILE = [
    'it\'s "quoted"',
    "`backticked`",
    "}) DETACH DELETE n //",
    "$id', label: 'x'}) CREATE (m) //",
    "line\nbreak\r\u2028 and ｆｕｌｌｗｉｄｔｈ and \\ backslash",
]


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def graph(backend: str, tmp_path: Path) -> Iterator[GraphStore]:
    store = _open(backend, tmp_path)
    yield store
    store.close()


def _open(backend: str, tmp_path: Path) -> GraphStore:
    if backend == "fake":
        from runtime.memory.fake import FakeGraph  # the lead's module; imported late on purpose

        return FakeGraph()
    from runtime.memory.graph import open_graph

    return open_graph(tmp_path / "graph", "kuzu" if backend == "kuzu" else "ladybug")


def _ids(nodes: list[GraphNode]) -> set[str]:
    return {node.id for node in nodes}


# -- the kuzu run ---------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.skipif(IN_KUZU_CHILD, reason="this is the kuzu run")
@pytest.mark.skipif(importlib.util.find_spec("kuzu") is None, reason="kuzu is not installed")
def test_kuzu_in_its_own_process(tmp_path: Path) -> None:
    env = {**os.environ, GRAPH_ENGINE_ENV: "kuzu"}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", __file__, "-v", "-p", "no:cacheprovider",
         "--basetemp", str(tmp_path / "kuzu-run"), "-k", "not test_kuzu_in_its_own_process"],
        capture_output=True, text=True, env=env, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, f"the kuzu run failed:\n{done.stdout}\n{done.stderr}"
    assert "[kuzu]" in done.stdout and " passed" in done.stdout, done.stdout


# -- nodes ----------------------------------------------------------------------------------


def test_add_and_get_node(graph: GraphStore) -> None:
    node_id = graph.add_node("entity", {"ref": "deploy", "n": 3})
    assert len(node_id) == 32 and int(node_id, 16) >= 0  # uuid4 hex
    node = graph.node(node_id)
    assert node is not None
    assert (node.id, node.label, node.properties) == (node_id, "entity", {"ref": "deploy", "n": 3})
    assert node.created_at.endswith("+00:00")
    assert graph.node("no-such-node") is None


def test_add_node_with_a_given_id_and_refuse_a_duplicate(graph: GraphStore) -> None:
    assert graph.add_node("entity", {}, node_id="fixed") == "fixed"
    with pytest.raises(MemoryStoreError):
        graph.add_node("entity", {}, node_id="fixed")


def test_find_or_add_is_idempotent_and_exact(graph: GraphStore) -> None:
    first = graph.find_or_add_node("entity", "deploy", {"kind": "service"})
    assert graph.find_or_add_node("entity", "deploy", {"kind": "other"}) == first
    node = graph.node(first)
    assert node is not None and node.properties == {"kind": "service", "ref": "deploy"}
    # A ref that contains, or is contained in, another is a different node.
    assert graph.find_or_add_node("entity", "deploy-prod", {}) != first
    assert graph.find_or_add_node("entity", "deplo", {}) != first
    assert graph.find_or_add_node("topic_tag", "deploy", {}) != first
    assert graph.counts() == (4, 0)


def test_add_edge_to_a_missing_node_is_refused(graph: GraphStore) -> None:
    a = graph.add_node("entity", {})
    with pytest.raises(MemoryStoreError):
        graph.add_edge(a, "missing", "applies_to", {})
    with pytest.raises(MemoryStoreError):
        graph.add_edge("missing", a, "applies_to", {})
    assert graph.counts() == (1, 0)


# -- neighbours -----------------------------------------------------------------------------


def test_neighbors_by_depth_in_both_directions_distinct(graph: GraphStore) -> None:
    a, b, c, d, e, far = (graph.add_node("n", {"name": x}) for x in "abcdef")
    graph.add_edge(a, b, "r", {})
    graph.add_edge(d, a, "r", {})  # into a: still a neighbour
    graph.add_edge(b, c, "r", {})
    graph.add_edge(c, a, "r", {})  # a cycle back to the start
    graph.add_edge(b, c, "other", {})  # a second edge to c
    graph.add_edge(e, far, "r", {})
    assert _ids(graph.neighbors(a, 1)) == {b, c, d}
    two = graph.neighbors(b, 2)
    assert _ids(two) == {a, c, d} and len(two) == 3
    assert a not in _ids(graph.neighbors(a, 30))
    assert graph.neighbors(e, 5) == [graph.node(far)]
    assert graph.neighbors("missing", 2) == []


def test_neighbors_depth_is_clamped(graph: GraphStore) -> None:
    chain = [graph.add_node("n", {"i": i}) for i in range(4)]
    for x, y in itertools.pairwise(chain):
        graph.add_edge(x, y, "r", {})
    assert _ids(graph.neighbors(chain[0], 0)) == {chain[1]}  # 0 -> 1
    assert _ids(graph.neighbors(chain[0], 10_000)) == set(chain[1:])  # capped at 30


# -- match ----------------------------------------------------------------------------------

VALUES = {
    "s": "text",
    "i": 1,
    "f": 1.5,
    "b": True,
    "z": None,
    "l": [1, "a", None],
    "o": {"k": [True, {"deep": "x"}]},
}


@pytest.fixture
def matched(graph: GraphStore) -> tuple[str, str, str]:
    full = graph.add_node("entity", VALUES)
    twisted = graph.add_node(
        "entity", {"i": True, "b": 1, "f": "1.5", "l": [True, "a", None], "o": {"k": [1, {}]}}
    )
    other_label = graph.add_node("topic_tag", {"s": "text"})
    return full, twisted, other_label


@pytest.mark.parametrize("key", list(VALUES))
def test_match_equal_values_of_every_type(
    graph: GraphStore, matched: tuple[str, str, str], key: str
) -> None:
    full, _, _ = matched
    assert _ids(graph.match("entity", {key: VALUES[key]})) == {full}


def test_match_keeps_one_and_true_apart(graph: GraphStore, matched: tuple[str, str, str]) -> None:
    full, twisted, _ = matched
    assert _ids(graph.match(None, {"i": 1})) == {full}
    assert _ids(graph.match(None, {"i": True})) == {twisted}
    assert _ids(graph.match(None, {"b": True})) == {full}
    assert _ids(graph.match(None, {"b": 1})) == {twisted}
    assert _ids(graph.match(None, {"i": 1.0})) == {full}  # 1 and 1.0 are one JSON number
    assert _ids(graph.match(None, {"f": 1.5})) == {full}  # the string "1.5" is not


def test_match_label_missing_keys_and_limit(
    graph: GraphStore, matched: tuple[str, str, str]
) -> None:
    full, twisted, other_label = matched
    assert _ids(graph.match(None, {"s": "text"})) == {full, other_label}
    assert _ids(graph.match("topic_tag", {"s": "text"})) == {other_label}
    assert _ids(graph.match("entity", {})) == {full, twisted}
    assert graph.match(None, {"missing": None}) == []
    assert _ids(graph.match(None, {"z": None})) == {full}  # absent is not null
    assert graph.match("entity", {"s": "tex"}) == []  # no substring matches
    assert len(graph.match(None, {}, limit=2)) == 2
    assert graph.match("nothing", {}) == []


# -- path -----------------------------------------------------------------------------------


def test_path_is_the_true_shortest(graph: GraphStore) -> None:
    s, t = graph.add_node("n", {"name": "s"}), graph.add_node("n", {"name": "t"})
    # The long way is added first, so a depth-first walk in insertion order finds it first.
    long_way = [graph.add_node("n", {"name": f"long{i}"}) for i in range(5)]
    for x, y in zip([s, *long_way], [*long_way, t], strict=True):
        graph.add_edge(x, y, "r", {})
    middle = graph.add_node("n", {"name": "middle"})
    graph.add_edge(t, middle, "r", {})  # pointing backwards: a path may run either way
    graph.add_edge(middle, s, "r", {})
    assert graph.path(s, t) == [s, middle, t]
    assert graph.path(t, s) == [t, middle, s]
    assert graph.path(long_way[0], long_way[3]) == long_way[:4]


def test_path_none_when_unreachable_or_too_far(graph: GraphStore) -> None:
    chain = [graph.add_node("n", {"i": i}) for i in range(5)]
    for x, y in itertools.pairwise(chain):
        graph.add_edge(x, y, "r", {})
    alone = graph.add_node("n", {})
    assert graph.path(chain[0], alone) is None
    assert graph.path(chain[0], "missing") is None
    assert graph.path(chain[0], chain[4], max_hops=3) is None
    assert graph.path(chain[0], chain[4], max_hops=4) == chain
    assert graph.path(chain[2], chain[2]) == [chain[2]]


# -- query ----------------------------------------------------------------------------------

REFUSED_QUERIES = [
    "CREATE (n:Node {id: 'x'})",
    "MATCH (n) SET n.label = 'x'",
    "MATCH (n) DETACH DELETE n",
    "LOAD FROM 'rows.csv' RETURN *",
    "ATTACH 'other.db' AS other (dbtype lbug)",
    "COPY Node FROM 'rows.csv'",
    "COPY (MATCH (n) RETURN n) TO 'out.csv'",
    "INSTALL json",
    "CALL read_csv('rows.csv') RETURN *",
    "CALL no_such_procedure() RETURN *",
]


def test_query_reads(graph: GraphStore) -> None:
    graph.add_node("entity", {})
    graph.add_node("entity", {})
    result = graph.query("MATCH (n) RETURN count(n) AS nodes")
    assert result.columns == ["nodes"]
    assert result.rows == [{"nodes": 2}]


@pytest.mark.parametrize("cypher", REFUSED_QUERIES)
def test_query_refuses_anything_but_reads(graph: GraphStore, cypher: str) -> None:
    graph.add_node("entity", {})
    with pytest.raises(PolicyError):
        graph.query(cypher)
    assert graph.counts() == (1, 0)


# -- hostile text ---------------------------------------------------------------------------


@pytest.mark.parametrize("text", HOSTILE)
def test_hostile_text_round_trips(graph: GraphStore, text: str) -> None:
    node_id = graph.add_node(text, {text: text, "ref": text}, node_id=text)
    assert node_id == text
    node = graph.node(text)
    assert node is not None and (node.label, node.properties) == (text, {text: text, "ref": text})
    assert graph.find_or_add_node(text, text, {}) == text
    other = graph.add_node("plain", {})
    graph.add_edge(text, other, text, {text: text})
    assert _ids(graph.neighbors(other)) == {text}
    assert _ids(graph.match(text, {text: text})) == {text}
    assert graph.path(other, text) == [other, text]
    assert graph.counts() == (2, 1)


# -- counts, clear, reopen ------------------------------------------------------------------


def test_counts_and_clear(graph: GraphStore) -> None:
    assert graph.counts() == (0, 0)
    a, b = graph.add_node("n", {}), graph.add_node("n", {})
    graph.add_edge(a, b, "r", {})
    graph.add_edge(b, a, "r", {})
    assert graph.counts() == (2, 2)
    graph.clear()
    assert graph.counts() == (0, 0)
    assert graph.node(a) is None
    graph.add_node("n", {})
    assert graph.counts() == (1, 0)


# The engines only: the fake keeps nothing on disk to reopen.
@pytest.mark.parametrize("engine", [b for b in BACKENDS if b != "fake"])
def test_reopen_after_close_keeps_data(engine: str, tmp_path: Path) -> None:
    backend = engine
    graph = _open(backend, tmp_path)
    a = graph.add_node("entity", {"ref": "kept"})
    b = graph.add_node("entity", {})
    graph.add_edge(a, b, "applies_to", {})
    graph.close()
    graph.close()  # safe twice
    with pytest.raises(MemoryStoreError):
        graph.counts()
    again = _open(backend, tmp_path)
    try:
        assert again.counts() == (2, 1)
        assert _ids(again.neighbors(a)) == {b}
        assert again.find_or_add_node("entity", "kept", {}) == a
    finally:
        again.close()


# -- linking notes and pages ----------------------------------------------------------------


def _note(
    source: str, text: str = "Deploys go through the canary first.", **payload: object
) -> Atom:
    return Atom(
        source=source,
        kind="note",
        text=text,
        category="lesson",
        payload=dict(payload),
        provenance=Provenance(panel="alpha", epoch=2, turn=41),
    )


def _page(slug: str, text: str) -> Atom:
    return Atom(source=f"wiki/{slug}", kind="wiki", text=text)


def test_link_note_makes_an_entry_linked_to_its_entities(graph: GraphStore) -> None:
    note_id = link_note(graph, _note("memory/2026-12-01.md#aa", applies_to=["deploy", "canary"]))
    node = graph.node(note_id)
    assert node is not None and node.label == "memory_entry"
    assert node.properties == {
        "preview": "Deploys go through the canary first.",
        "source_path": "memory/2026-12-01.md#aa",
        "category": "lesson",
        "panel": "alpha",
        "epoch": 2,
        "turn": 41,
    }
    entities = graph.neighbors(note_id)
    assert {(n.label, n.properties["ref"]) for n in entities} == {
        ("entity", "deploy"),
        ("entity", "canary"),
    }
    # Linking again changes nothing; a second note on the same entity shares its node.
    assert (
        link_note(graph, _note("memory/2026-12-01.md#aa", applies_to="deploy, canary")) == note_id
    )
    assert graph.counts() == (3, 2)
    other = link_note(graph, _note("memory/2026-12-01.md#bb", applies_to="canary"))
    assert graph.counts() == (4, 3)
    assert graph.path(note_id, other) is not None and len(graph.path(note_id, other) or []) == 3


def test_link_note_preview_and_no_entities(graph: GraphStore) -> None:
    note_id = link_note(graph, Atom(source="memory/x.md#1", kind="note", text="  " + "x" * 500))
    node = graph.node(note_id)
    assert node is not None and node.properties["preview"] == "x" * 200
    assert "panel" not in node.properties
    assert graph.counts() == (1, 0)


def test_link_page_tags_without_duplicates(graph: GraphStore) -> None:
    text = "---\ntitle: Deploy\ntags: [ops, 'release']\n---\n# Deploy\n"
    page_id = link_page(graph, _page("deploy/checklist", text))
    page = graph.node(page_id)
    assert page is not None and page.label == "wiki_page"
    assert page.properties["ref"] == "deploy/checklist"
    tags = graph.neighbors(page_id)
    assert {(n.label, n.properties["ref"]) for n in tags} == {
        ("topic_tag", "ops"),
        ("topic_tag", "release"),
    }
    updated = "---\ntags: ops, release, oncall\n---\n# Deploy, updated\n"
    assert link_page(graph, _page("deploy/checklist", updated)) == page_id
    assert graph.counts() == (4, 3)
    assert link_page(graph, _page("deploy/checklist", updated)) == page_id
    assert graph.counts() == (4, 3)
    page = graph.node(page_id)
    assert page is not None and page.properties["preview"].endswith("# Deploy, updated")
    dropped = "---\ntags: oncall\n---\n# Deploy, trimmed\n"
    link_page(graph, _page("deploy/checklist", dropped))
    refs = {n.properties["ref"] for n in graph.neighbors(page_id)}
    assert refs == {"oncall"} and graph.counts() == (4, 1)


def test_set_properties_and_remove_edges(graph: GraphStore) -> None:
    a, b, c = (graph.add_node("n", {"k": i}) for i in range(3))
    graph.add_edge(a, b, "r", {})
    graph.add_edge(a, c, "r", {})
    graph.add_edge(a, c, "s", {})
    graph.add_edge(b, a, "r", {})
    graph.set_properties(a, {"k": [1, {"x": None}], "quote": 'it\'s "q"'})
    node = graph.node(a)
    assert node is not None and node.properties == {"k": [1, {"x": None}], "quote": 'it\'s "q"'}
    with pytest.raises(MemoryStoreError):
        graph.set_properties("missing", {})
    assert graph.remove_edges(a, "r") == 2
    assert graph.remove_edges(a, "r") == 0
    assert graph.counts() == (3, 2)  # a-s->c and b-r->a stay


def test_rebuild_recreates_the_same_graph(graph: GraphStore) -> None:
    notes = [
        _note("memory/a.md#1", applies_to=["deploy"]),
        _note("memory/a.md#2", applies_to="deploy,canary"),
    ]
    pages = [_page("deploy", "---\ntags: [ops]\n---\nbody"), _page("plain", "no front matter")]
    graph.add_node("stale", {})
    seen: list[tuple[int, int]] = []
    assert rebuild_graph(graph, notes, pages, progress=lambda *p: seen.append(p)) == (7, 4)
    assert seen == [(1, 4), (2, 4), (3, 4), (4, 4)]
    assert graph.match("stale", {}) == []
    assert rebuild_graph(graph, notes, pages) == (7, 4)


def test_tag_and_applies_to_parsing() -> None:
    assert front_matter_tags('---\ntags: [a, "b c", a]\n---\nx') == ["a", "b c"]
    assert front_matter_tags("---\r\ntitle: x\r\ntags: a,b\r\n---\r\n") == ["a", "b"]
    assert front_matter_tags("text\n---\ntags: [a]\n---\n") == []  # not leading
    assert front_matter_tags("---\ntitle: x\n---\ntags: [a]\n") == []  # outside the block
    assert front_matter_tags("---\ntags: []\n---\n") == []
    assert applies_to({"applies_to": " a, b ,,a"}) == ["a", "b"]
    assert applies_to({"applies_to": ["a", 3, None, ""]}) == ["a", "3"]
    assert applies_to({"applies_to": {"a": 1}}) == []
    assert applies_to({}) == []
