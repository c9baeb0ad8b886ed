"""Carrying the original mnemara's Kuzu graph into ours, when ours is a ladybug graph.

ladybug cannot open the original's `graph/kuzu_db`, and kuzu cannot load in a process that
has ladybug (engines.py), so the original is read in a child process, read-only (`python -m
runtime.memory.carry FILE` prints its nodes and edges as JSON; no byte of it changes). Our
graph is rebuilt from notes and the wiki first; then each node and edge of the original that
the rebuild did not give is added with its id, label, properties text and time as they were:
the ones its agent added by hand (`graph_add_node`, `graph_add_edge`), and any the hooks made
for notes that are gone.

Which original nodes the rebuild gave (`plan_carry`, pure): an `entity`, `topic_tag` or
`wiki_page` with the same `ref` (a page also by its path's slug), a `memory_entry` of the same
day file whose preview starts with the same line, or a node whose id ours holds already (a
carry done before). An original edge is given when ours links the nodes it maps to with the
same relationship. Everything else is carried, so a second run carries nothing.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from runtime.errors import EngineUnavailableError
from sqlitekit.jsonload import load_json

DUMP_TIMEOUT = 300.0  # seconds for the child that reads the original's graph
_REF_LABELS = frozenset({"entity", "topic_tag", "wiki_page"})
_NODES = "MATCH (n:Node) RETURN n.id, n.label, n.properties, n.created_at ORDER BY n.id"
_EDGES = (
    "MATCH (a:Node)-[e:Edge]->(b:Node) "
    "RETURN e.id, a.id, b.id, e.relationship, e.properties, e.created_at ORDER BY e.id"
)


@dataclass(frozen=True)
class NodeRecord:
    """A node as stored: its properties are the JSON text, kept byte for byte."""

    id: str
    label: str
    properties: str
    created_at: str


@dataclass(frozen=True)
class EdgeRecord:
    id: str
    from_id: str
    to_id: str
    relationship: str
    properties: str
    created_at: str


@dataclass(frozen=True)
class GraphRecords:
    nodes: tuple[NodeRecord, ...]
    edges: tuple[EdgeRecord, ...]


@dataclass(frozen=True)
class CarryPlan:
    """What to add to ours: nodes as they were, edges with their ends mapped to ours."""

    nodes: tuple[NodeRecord, ...]
    edges: tuple[EdgeRecord, ...]
    given_nodes: int  # original nodes the rebuild (or an earlier carry) holds already
    given_edges: int

    def describe(self) -> str:
        """`3 nodes (person 1, ...) and 2 edges (decided 1, ...)`."""
        return (
            f"{len(self.nodes)} nodes{_tally(n.label for n in self.nodes)} and "
            f"{len(self.edges)} edges{_tally(e.relationship for e in self.edges)}"
        )


def plan_carry(original: GraphRecords, ours: GraphRecords) -> CarryPlan:
    """The original's nodes and edges that `ours` lacks (see the module doc)."""
    ids = {node.id for node in ours.nodes}
    by_key: dict[tuple[str, str, str], list[str]] = defaultdict(list)
    for node in ours.nodes:
        for key in _keys(node):
            by_key[key].append(node.id)
    mapped: dict[str, str] = {}
    carried: list[NodeRecord] = []
    taken: set[str] = set()
    for node in original.nodes:
        if node.id in ids:
            mapped[node.id] = node.id
            continue
        match = next(
            (i for key in _keys(node) for i in by_key.get(key, ()) if i not in taken), None
        )
        if match is None:
            carried.append(node)
            mapped[node.id] = node.id
        else:
            taken.add(match)  # one original node per node of ours: duplicates are carried
            mapped[node.id] = match
    links = Counter((e.from_id, e.to_id, e.relationship) for e in ours.edges)
    edge_ids = {edge.id for edge in ours.edges}
    edges: list[EdgeRecord] = []
    given_edges = 0
    for edge in original.edges:
        link = (
            mapped.get(edge.from_id, edge.from_id),
            mapped.get(edge.to_id, edge.to_id),
            edge.relationship,
        )
        if edge.id in edge_ids or links[link] > 0:
            links[link] -= 1
            given_edges += 1
            continue
        edges.append(
            EdgeRecord(
                edge.id, link[0], link[1], edge.relationship, edge.properties, edge.created_at
            )
        )
    return CarryPlan(
        nodes=tuple(carried),
        edges=tuple(edges),
        given_nodes=len(original.nodes) - len(carried),
        given_edges=given_edges,
    )


def _keys(node: NodeRecord) -> list[tuple[str, str, str]]:
    """What makes `node` the same as one a rebuild makes: (label, kind of key, value)."""
    properties = _properties(node.properties)
    if node.label in _REF_LABELS:
        ref = str(properties.get("ref") or "")
        if not ref:
            return []
        keys = [(node.label, "ref", ref)]
        if node.label == "wiki_page":
            slug = ref.split("/wiki/", 1)[-1].removesuffix(".md")
            keys += [(node.label, "ref", slug), (node.label, "ref", slug.lower().replace("_", "-"))]
        return keys
    if node.label == "memory_entry":
        day = Path(str(properties.get("source_path") or "").split("#", 1)[0]).name
        first = next(
            (
                line.strip()
                for line in str(properties.get("preview") or "").splitlines()
                if line.strip()
            ),
            "",
        )
        return [(node.label, day, first)] if day and first else []
    return []


def _properties(text: str) -> dict[str, Any]:
    try:
        value = load_json(text) if text else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _tally(names: Iterable[str]) -> str:
    counts = Counter(names)
    if not counts:
        return ""
    return " (" + ", ".join(f"{name or '(none)'} {n}" for name, n in sorted(counts.items())) + ")"


# -- reading a graph ---------------------------------------------------------------------------


def read_records(rows_of: Any) -> GraphRecords:
    """Every node and edge, through `rows_of(cypher) -> rows` (an open graph's reader)."""
    nodes = tuple(NodeRecord(*(_text(v) for v in row)) for row in rows_of(_NODES))
    edges = tuple(EdgeRecord(*(_text(v) for v in row)) for row in rows_of(_EDGES))
    return GraphRecords(nodes, edges)


def _text(value: Any) -> str:
    return "" if value is None else str(value)


def read_original_graph(path: Path) -> GraphRecords:
    """The nodes and edges of the kuzu graph at `path`, read read-only in a child process.

    EngineUnavailableError says why it could not be read (kuzu missing, a damaged file)."""
    try:
        done = subprocess.run(
            [sys.executable, "-m", "runtime.memory.carry", str(path)],
            capture_output=True,
            text=True,
            timeout=DUMP_TIMEOUT,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise EngineUnavailableError(
            f"the original's graph could not be read ({exc})", store="graph", path=path
        ) from None
    if done.returncode != 0:
        reason = (done.stderr.strip().splitlines() or ["no reason given"])[-1][:300]
        raise EngineUnavailableError(
            f"the original's graph could not be read: {reason}", store="graph", path=path
        )
    data = json.loads(done.stdout)
    return GraphRecords(
        nodes=tuple(NodeRecord(**node) for node in data["nodes"]),
        edges=tuple(EdgeRecord(**edge) for edge in data["edges"]),
    )


def _dump(path: Path) -> dict[str, Sequence[dict[str, str]]]:
    """The child's side: open the graph with kuzu, read-only, and list what it holds."""
    from runtime.memory.engines import import_engine, open_database

    database, connection = open_database(import_engine("kuzu"), path, None, read_only=True)
    try:
        records = read_records(lambda cypher: connection.execute(cypher).get_all())
    finally:
        connection.close()
        database.close()
    return {
        "nodes": [asdict(node) for node in records.nodes],
        "edges": [asdict(edge) for edge in records.edges],
    }


if __name__ == "__main__":
    try:
        print(json.dumps(_dump(Path(sys.argv[1]))))
    except EngineUnavailableError as exc:
        print(exc, file=sys.stderr)
        raise SystemExit(1) from None
