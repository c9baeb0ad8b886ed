"""The graph engines themselves: never two in one process, unreadable files, the original's graph.

kuzu only ever runs in a child process here (it crashes next to ladybug); ladybug runs in
this one. The children print JSON on their last line for the parent to check.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import subprocess
import sys
import textwrap
import threading
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import pytest

from runtime.errors import EngineUnavailableError, MemoryStoreError, PolicyError
from runtime.memory.graph import open_graph

ROOT = Path(__file__).resolve().parents[3]
needs_kuzu = pytest.mark.skipif(
    importlib.util.find_spec("kuzu") is None, reason="kuzu is not installed"
)


def _child(script: str, *args: str) -> Any:
    """Run `script` in a fresh interpreter from the project root; its last line is JSON."""
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script), *args],
        capture_output=True, text=True, cwd=ROOT, timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    assert done.returncode == 0, f"child failed ({done.returncode}):\n{done.stdout}\n{done.stderr}"
    return json.loads(done.stdout.strip().splitlines()[-1])


# The original mnemara's schema and labels, written with the kuzu package itself.
ORIGINAL_WRITER = """
    import json, sys
    import kuzu
    db = kuzu.Database(sys.argv[1] + "/kuzu_db")
    conn = kuzu.Connection(db)
    conn.execute("CREATE NODE TABLE Node(id STRING PRIMARY KEY, label STRING, "
                 "properties STRING, created_at STRING)")
    conn.execute("CREATE REL TABLE Edge(FROM Node TO Node, id STRING, relationship STRING, "
                 "properties STRING, created_at STRING)")
    entry = {"preview": "Use the canary", "source_path": "memory/2025-09-01.md"}
    nodes = [
        ("m1", "memory_entry", entry),
        ("e1", "entity", {"ref": "deploy"}),
        ("e2", "entity", {"ref": "deploy-prod"}),
    ]
    for node_id, label, props in nodes:
        conn.execute("CREATE (n:Node {id: $id, label: $l, properties: $p, created_at: $t})",
                     {"id": node_id, "l": label, "p": json.dumps(props), "t": "2025-09-01"})
    conn.execute("MATCH (a:Node {id: 'm1'}), (b:Node {id: 'e1'}) CREATE (a)-[:Edge {id: 'x1', "
                 "relationship: 'applies_to', properties: $p, created_at: ''}]->(b)",
                 {"p": json.dumps({"ref": "deploy"})})
    conn.close()
    db.close()
    print(json.dumps("written"))
"""


def test_a_loaded_kuzu_stops_ladybug_before_the_crash(tmp_path: Path) -> None:
    result = _child(
        """
        import json, sys
        import kuzu
        from runtime.errors import EngineUnavailableError
        from runtime.memory.graph import open_graph
        try:
            open_graph(__import__("pathlib").Path(sys.argv[1]), "ladybug")
        except EngineUnavailableError as exc:
            print(json.dumps({"refused": str(exc), "ladybug": "ladybug" in sys.modules}))
        """,
        str(tmp_path),
    )
    assert "kuzu is already loaded" in result["refused"]
    assert result["ladybug"] is False


def test_a_loaded_ladybug_stops_kuzu(tmp_path: Path) -> None:
    import ladybug  # noqa: F401  (the in-process engine of this suite)

    with pytest.raises(EngineUnavailableError, match="ladybug is already loaded") as caught:
        open_graph(tmp_path, "kuzu")
    assert caught.value.store == "graph"
    assert "kuzu" not in sys.modules


def test_a_missing_engine_says_what_to_install(tmp_path: Path) -> None:
    result = _child(
        """
        import json, sys
        sys.modules["kuzu"] = None  # what Python does for a package that is not installed
        from runtime.errors import EngineUnavailableError
        from runtime.memory.graph import open_graph
        try:
            open_graph(__import__("pathlib").Path(sys.argv[1]), "kuzu")
        except EngineUnavailableError as exc:
            print(json.dumps(str(exc)))
        """,
        str(tmp_path),
    )
    assert "pip install 'mnemara[kuzu]'" in result


def test_a_corrupt_file_names_the_rebuild(tmp_path: Path) -> None:
    (tmp_path / "lbug_db").write_bytes(os.urandom(8192))
    with pytest.raises(EngineUnavailableError) as caught:
        open_graph(tmp_path, "ladybug", instance="alpha")
    message = str(caught.value)
    assert "mnemara memory graph rebuild --instance alpha" in message
    assert caught.value.store == "graph" and caught.value.path == tmp_path / "lbug_db"


def test_an_unknown_engine_is_refused(tmp_path: Path) -> None:
    with pytest.raises(EngineUnavailableError, match="unknown graph engine"):
        open_graph(tmp_path, "neo4j")  # type: ignore[arg-type]


@needs_kuzu
def test_ladybug_refuses_a_kuzu_file_and_never_reads_it_by_default(tmp_path: Path) -> None:
    kuzu_root = tmp_path / "original"
    kuzu_root.mkdir()
    assert _child(ORIGINAL_WRITER, str(kuzu_root)) == "written"
    # Switching the engine leaves kuzu's file alone: ladybug starts its own, empty.
    fresh = open_graph(kuzu_root, "ladybug")
    try:
        assert fresh.counts() == (0, 0)
    finally:
        fresh.close()
    # Handed kuzu's file under its own name, ladybug refuses it with the way out.
    copied = tmp_path / "copied"
    copied.mkdir()
    (copied / "lbug_db").write_bytes((kuzu_root / "kuzu_db").read_bytes())
    with pytest.raises(EngineUnavailableError, match="memory graph rebuild --instance NAME"):
        open_graph(copied, "ladybug")


@needs_kuzu
def test_kuzu_opens_an_original_instance_graph_in_place(tmp_path: Path) -> None:
    root = tmp_path / "graph"  # <instance>/graph, as the original laid it out
    root.mkdir()
    assert _child(ORIGINAL_WRITER, str(root)) == "written"
    result = _child(
        """
        import json, sys
        from pathlib import Path
        from runtime.memory.graph import open_graph
        graph = open_graph(Path(sys.argv[1]), "kuzu")
        out = {
            "counts": list(graph.counts()),
            "neighbors": [(n.id, n.label, n.properties) for n in graph.neighbors("e1")],
            "match": [n.id for n in graph.match("entity", {"ref": "deploy"})],
            "found": graph.find_or_add_node("entity", "deploy", {}),
            "path": graph.path("m1", "e1"),
        }
        graph.close()
        print(json.dumps(out))
        """,
        str(root),
    )
    assert result["counts"] == [3, 1]
    assert result["neighbors"] == [
        ["m1", "memory_entry", {"preview": "Use the canary", "source_path": "memory/2025-09-01.md"}]
    ]
    assert result["match"] == ["e1"]  # not e2, whose ref merely contains "deploy"
    assert result["found"] == "e1"
    assert result["path"] == ["m1", "e1"]
    assert sorted(p.name for p in root.iterdir()) == ["kuzu_db"]  # opened in place


def test_calls_from_changing_worker_threads(tmp_path: Path) -> None:
    graph = open_graph(tmp_path, "ladybug")
    threads: set[str] = set()
    ids: list[str] = []

    def add(i: int) -> None:
        threads.add(threading.current_thread().name)
        ids.append(graph.add_node("n", {"i": i}))
        if len(ids) > 1:
            graph.add_edge(ids[-2], ids[-1], "next", {})

    async def main() -> None:
        # As Memory.run does: one call at a time, in whichever worker thread anyio picks.
        limiter = anyio.CapacityLimiter(1)
        async with anyio.create_task_group() as group:
            for i in range(20):
                group.start_soon(partial(anyio.to_thread.run_sync, add, i, limiter=limiter))

    try:
        anyio.run(main)
        for i in range(5):  # and from fresh threads, one after another
            worker = threading.Thread(target=add, args=(100 + i,))
            worker.start()
            worker.join()
        assert len(threads) >= 5
        assert graph.counts() == (25, 24)
        assert graph.path(ids[0], ids[-1]) == ids
    finally:
        graph.close()


def test_query_values_come_back_json_ready(tmp_path: Path) -> None:
    graph = open_graph(tmp_path, "ladybug")
    try:
        a = graph.add_node("entity", {"ref": "x"})
        result = graph.query(
            "MATCH (n:Node) WHERE n.id = $id RETURN n, n.id AS id, date('2026-12-01') AS day, "
            "interval('1 day') AS span, uuid('a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11') AS u, "
            "CAST(1.5 AS DECIMAL(4, 2)) AS money, [1, 2] AS numbers",
            {"id": a},
        )
        assert result.columns == ["n", "id", "day", "span", "u", "money", "numbers"]
        row = result.rows[0]
        json.dumps(result.rows)  # everything is JSON-able
        assert row["id"] == a and row["n"]["properties"] == '{"ref": "x"}'
        assert (row["day"], row["span"], row["numbers"]) == ("2026-12-01", 86400.0, [1, 2])
        assert row["u"] == "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11" and row["money"] == "1.50"
        with pytest.raises(MemoryStoreError, match="graph query failed"):
            graph.query("MATCH (n:Nope) RETURN n")
    finally:
        graph.close()


# Queries that pass the read-only check, or should fail it, run on the real engine: none of
# them may write. Each either is refused, fails in the engine, or reads.
ON_THE_ENGINE = [
    "RETURN 'a\\' CREATE (n:Node {id: \"evil\"}) //'",
    "RETURN 'a'' CREATE (n:Node {id: \"evil\"}) //'",
    'RETURN "a\\" CREATE (n:Node {id: \'evil\'}) //"',
    "MATCH (`a`` CREATE (n:Node {id: 'evil'}) //`) RETURN 1",
    "RETURN 1 //\u2028 CREATE (n:Node {id: 'evil'})",
    "RETURN 1 //\r CREATE (n:Node {id: 'evil'})",
    "RETURN 1 /* /* */ CREATE (n:Node {id: 'evil'}) */",
    "RETURN 1 -- CREATE (n:Node {id: 'evil'})",
    "MATCH (n) ＣＲＥＡＴＥ (m:Node {id: 'evil'})",
    "MATCH (n) CRЕATE (m:Node {id: 'evil'})",  # a Cyrillic Е
    "MATCH (n)\u00a0CREATE (m:Node {id: 'evil'})",
    "MATCH (n) RETURN n\u037e CREATE (m:Node {id: 'evil'})",  # a Greek question mark
    "RETURN 'x' UNION ALL MATCH (n) RETURN n.id",
    "CALL show_tables() RETURN *",
    "CALL table_info('Node') RETURN *",
    "RETURN nextval('seq')",
    "CALL threads=1",
]


@pytest.mark.parametrize("cypher", ON_THE_ENGINE)
def test_nothing_that_passes_the_check_can_write(tmp_path: Path, cypher: str) -> None:
    graph = open_graph(tmp_path, "ladybug")
    try:
        graph.add_node("entity", {})
        with contextlib.suppress(PolicyError, MemoryStoreError):
            graph.query(cypher)
        assert graph.counts() == (1, 0)
        assert graph.node("evil") is None
    finally:
        graph.close()
