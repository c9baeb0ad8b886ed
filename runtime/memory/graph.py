"""The property graph on the Kuzu API (ladybug or kuzu): `open_graph` and its GraphStore.

The schema is the original mnemara's, so an original instance's `graph/kuzu_db` opens in place:

    Node(id STRING PRIMARY KEY, label STRING, properties STRING /* JSON */, created_at STRING)
    Edge(FROM Node TO Node, id STRING, relationship STRING, properties STRING, created_at STRING)

Every value travels as a query parameter. The only text ever formatted into a query is a hop
bound, after `int()` and clamping to the engines' cap of 30. Properties are JSON text, so
matching on them happens in Python over the decoded values, never on the JSON text.

Callers run the methods one at a time, from whichever worker thread the limiter picks; the
engines' connections accept calls from any thread (tests/runtime/memory/test_graph_engines.py).
"""

from __future__ import annotations

import json
import math
import re
import uuid
from collections.abc import Mapping
from datetime import UTC, date, datetime, time, timedelta
from pathlib import Path
from typing import Any

from runtime.errors import MemoryStoreError
from runtime.memory.carry import CarryPlan, GraphRecords, read_records
from runtime.memory.engines import GraphEngine, database_path, import_engine, open_database
from runtime.memory.linking import link_note, link_page, rebuild_graph
from runtime.memory.model import GraphNode, QueryResult
from runtime.policy.cypher import require_read_only
from sqlitekit.jsonload import load_json

__all__ = ["MAX_HOPS", "KuzuGraph", "link_note", "link_page", "open_graph", "rebuild_graph"]

MAX_HOPS = 30  # both engines refuse variable-length bounds above 30

_NODE_TABLE = (
    "CREATE NODE TABLE Node(id STRING PRIMARY KEY, label STRING, properties STRING, "
    "created_at STRING)"
)
_EDGE_TABLE = (
    "CREATE REL TABLE Edge(FROM Node TO Node, id STRING, relationship STRING, "
    "properties STRING, created_at STRING)"
)
_NODE_COLUMNS = "n.id, n.label, n.properties, n.created_at"
# Text that every JSON writer spells the same way between its quotes (nothing to escape), so
# a node holding the value holds `"value"` in its properties text.
_PLAIN_TEXT = re.compile(r"[A-Za-z0-9 _.,:;#@+=/-]*")


def open_graph(
    root: Path,
    engine: GraphEngine = "ladybug",
    *,
    instance: str | None = None,
    read_only: bool = False,
) -> KuzuGraph:
    """Open (creating if needed) the graph under `root` with `engine`.

    kuzu uses `<root>/kuzu_db`, where the original mnemara kept it; ladybug uses
    `<root>/lbug_db`. `instance` only names the instance in error messages. `read_only`
    opens an existing graph without the right to write: an engine opened for writing
    rewrites its file on close even when nothing changed, so readers (replay's dry run, the
    CLI's queries) leave every byte alone.
    Raises EngineUnavailableError when the engine is missing or cannot open the file.
    """
    module = import_engine(engine)
    path = database_path(root, engine)
    if not read_only:
        root.mkdir(parents=True, exist_ok=True)
    database, connection = open_database(module, path, instance, read_only)
    graph = KuzuGraph(database, connection, path)
    if read_only:
        return graph
    try:
        graph.ensure_schema()
    except BaseException:
        graph.close()
        raise
    return graph


class KuzuGraph:
    """GraphStore over one open database and connection (either engine)."""

    def __init__(self, database: Any, connection: Any, path: Path) -> None:
        self._database: Any = database
        self._connection: Any = connection
        self.db_path = path

    # -- plumbing ---------------------------------------------------------------------------

    def _rows(self, cypher: str, params: Mapping[str, Any] | None = None) -> list[list[Any]]:
        result = self._execute(cypher, params)
        return [list(row) for row in result.get_all()]

    def _execute(self, cypher: str, params: Mapping[str, Any] | None = None) -> Any:
        if self._connection is None:
            raise MemoryStoreError("the graph is closed", path=self.db_path)
        try:
            return self._connection.execute(cypher, dict(params or {}))
        except RuntimeError as exc:
            raise MemoryStoreError(f"graph query failed: {exc}", path=self.db_path) from exc

    def ensure_schema(self) -> None:
        """Create the Node and Edge tables that the catalog does not list yet."""
        tables = {row[0] for row in self._rows("CALL show_tables() RETURN name")}
        if "Node" not in tables:
            self._execute(_NODE_TABLE)
        if "Edge" not in tables:
            self._execute(_EDGE_TABLE)

    def _nodes(self, rows: list[list[Any]]) -> list[GraphNode]:
        return [
            GraphNode(
                id=row[0], label=row[1] or "", properties=_decode(row[2]), created_at=row[3] or ""
            )
            for row in rows
        ]

    # -- GraphStore -------------------------------------------------------------------------

    def add_node(
        self, label: str, properties: Mapping[str, Any], node_id: str | None = None
    ) -> str:
        new_id = node_id if node_id is not None else uuid.uuid4().hex
        self._execute(
            "CREATE (n:Node {id: $id, label: $label, properties: $properties, created_at: $at})",
            {"id": new_id, "label": label, "properties": _encode(properties), "at": _now()},
        )
        return new_id

    def find_or_add_node(self, label: str, ref: str, properties: Mapping[str, Any]) -> str:
        found = self.match(label, {"ref": ref}, limit=1)
        return found[0].id if found else self.add_node(label, {**properties, "ref": ref})

    def add_edge(
        self, from_id: str, to_id: str, relationship: str, properties: Mapping[str, Any]
    ) -> str:
        # MATCH ... CREATE creates nothing, silently, when a node is missing: check first.
        found = {
            row[0]
            for row in self._rows(
                "MATCH (n:Node) WHERE n.id IN $ids RETURN n.id", {"ids": [from_id, to_id]}
            )
        }
        missing = [node_id for node_id in (from_id, to_id) if node_id not in found]
        if missing:
            raise MemoryStoreError(f"graph edge refused: no node {missing[0]!r}", path=self.db_path)
        edge_id = uuid.uuid4().hex
        self._execute(
            "MATCH (a:Node {id: $from_id}), (b:Node {id: $to_id}) "
            "CREATE (a)-[:Edge {id: $id, relationship: $relationship, properties: $properties, "
            "created_at: $at}]->(b)",
            {
                "from_id": from_id,
                "to_id": to_id,
                "id": edge_id,
                "relationship": relationship,
                "properties": _encode(properties),
                "at": _now(),
            },
        )
        return edge_id

    def node(self, node_id: str) -> GraphNode | None:
        rows = self._rows(f"MATCH (n:Node {{id: $id}}) RETURN {_NODE_COLUMNS}", {"id": node_id})
        nodes = self._nodes(rows)
        return nodes[0] if nodes else None

    def set_properties(self, node_id: str, properties: Mapping[str, Any]) -> None:
        if self.node(node_id) is None:  # SET on no match changes nothing, silently
            raise MemoryStoreError(f"no graph node {node_id!r}", path=self.db_path)
        self._execute(
            "MATCH (n:Node {id: $id}) SET n.properties = $properties",
            {"id": node_id, "properties": _encode(properties)},
        )

    def remove_edges(self, from_id: str, relationship: str) -> int:
        match = "MATCH (a:Node {id: $id})-[e:Edge]->(:Node) WHERE e.relationship = $relationship "
        params = {"id": from_id, "relationship": relationship}
        count = self._rows(match + "RETURN count(e)", params)[0][0]
        if count:
            self._execute(match + "DELETE e", params)
        return int(count)

    def neighbors(self, node_id: str, depth: int = 1) -> list[GraphNode]:
        hops = _clamp_hops(depth)
        # SHORTEST finds each reachable node once, breadth first; a plain `*1..N` walks every
        # path (cycles included, back to the start) before DISTINCT folds them.
        rows = self._rows(
            f"MATCH (a:Node {{id: $id}})-[:Edge* SHORTEST 1..{hops}]-(n:Node) "
            f"WHERE n.id <> $id RETURN DISTINCT {_NODE_COLUMNS} ORDER BY n.id",
            {"id": node_id},
        )
        return self._nodes(rows)

    def match(
        self, label: str | None, properties: Mapping[str, Any], limit: int = 100
    ) -> list[GraphNode]:
        conditions: list[str] = []
        params: dict[str, Any] = {}
        if label is not None:
            conditions.append("n.label = $label")
            params["label"] = label
        for i, value in enumerate(properties.values()):
            # Only narrows the rows fetched: the decision is json_equal's, below.
            if isinstance(value, str) and _PLAIN_TEXT.fullmatch(value):
                conditions.append(f"n.properties CONTAINS $text{i}")
                params[f"text{i}"] = json.dumps(value)
        where = f"WHERE {' AND '.join(conditions)} " if conditions else ""
        rows = self._rows(
            f"MATCH (n:Node) {where}RETURN {_NODE_COLUMNS} ORDER BY n.created_at, n.id", params
        )
        wanted = max(0, int(limit))
        found: list[GraphNode] = []
        for node in self._nodes(rows):
            if len(found) >= wanted:
                break
            if all(
                key in node.properties and json_equal(node.properties[key], value)
                for key, value in properties.items()
            ):
                found.append(node)
        return found

    def path(self, from_id: str, to_id: str, max_hops: int = MAX_HOPS) -> list[str] | None:
        if from_id == to_id:
            return [from_id] if self.node(from_id) is not None else None
        hops = _clamp_hops(max_hops)
        rows = self._rows(
            f"MATCH p = (a:Node {{id: $from_id}})-[:Edge* SHORTEST 1..{hops}]-"
            "(b:Node {id: $to_id}) RETURN properties(nodes(p), 'id') LIMIT 1",
            {"from_id": from_id, "to_id": to_id},
        )
        return [str(node_id) for node_id in rows[0][0]] if rows else None

    def query(self, cypher: str, params: Mapping[str, Any] | None = None) -> QueryResult:
        require_read_only(cypher)
        result = self._execute(cypher, params)
        columns = [str(name) for name in result.get_column_names()]
        rows = [
            {column: to_json(value) for column, value in zip(columns, row, strict=True)}
            for row in result.get_all()
        ]
        return QueryResult(columns=columns, rows=rows)

    def records(self) -> GraphRecords:
        """Every node and edge as stored (properties as their JSON text)."""
        return read_records(self._rows)

    def carry(self, plan: CarryPlan) -> None:
        """Add the plan's nodes and edges with their ids, properties text and times as they
        were (`mnemara migrate`, bringing the original's graph over: carry.py)."""
        for node in plan.nodes:
            self._execute(
                "CREATE (n:Node {id: $id, label: $label, properties: $properties, "
                "created_at: $at})",
                {"id": node.id, "label": node.label, "properties": node.properties,
                 "at": node.created_at},
            )  # fmt: skip
        for edge in plan.edges:
            self._execute(
                "MATCH (a:Node {id: $from_id}), (b:Node {id: $to_id}) "
                "CREATE (a)-[:Edge {id: $id, relationship: $relationship, "
                "properties: $properties, created_at: $at}]->(b)",
                {"from_id": edge.from_id, "to_id": edge.to_id, "id": edge.id,
                 "relationship": edge.relationship, "properties": edge.properties,
                 "at": edge.created_at},
            )  # fmt: skip

    def counts(self) -> tuple[int, int]:
        nodes = self._rows("MATCH (n:Node) RETURN count(n)")[0][0]
        edges = self._rows("MATCH ()-[e:Edge]->() RETURN count(e)")[0][0]
        return int(nodes), int(edges)

    def clear(self) -> None:
        self._execute("MATCH (n:Node) DETACH DELETE n")

    def close(self) -> None:
        connection, database = self._connection, self._database
        self._connection = self._database = None
        if connection is not None:
            connection.close()
        if database is not None:
            database.close()


def json_equal(a: Any, b: Any) -> bool:
    """Equality of decoded JSON values: 1 equals 1.0, but never true (Python says 1 == True)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[key], b[key]) for key in a)
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    if isinstance(a, list | dict) or isinstance(b, list | dict):
        return False
    return bool(a == b)


def to_json(value: Any) -> Any:
    """An engine value as a JSON-able value (dates as ISO text, odd types as text)."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, list | tuple):
        return [to_json(item) for item in value]
    if isinstance(value, dict):
        return {str(key): to_json(item) for key, item in value.items()}
    if isinstance(value, datetime | date | time):
        return value.isoformat()
    if isinstance(value, timedelta):
        return value.total_seconds()
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return str(value)


def _clamp_hops(hops: int) -> int:
    return max(1, min(int(hops), MAX_HOPS))


def _encode(properties: Mapping[str, Any]) -> str:
    return json.dumps(dict(properties))


def _decode(text: Any) -> dict[str, Any]:
    """A node's properties; text that is not a JSON object is kept under `_raw`."""
    if not text:
        return {}
    try:
        value = load_json(text)
    except (TypeError, ValueError):
        return {"_raw": str(text)}
    return value if isinstance(value, dict) else {"_raw": str(text)}


def _now() -> str:
    return datetime.now(UTC).isoformat()
