"""The memory tools in a turn, on the real engines: write to all, search, wiki, graph."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from tool_turns import results, run, tool_turn

from runtime.instance.home import InstancePaths
from runtime.turn.open import open_session
from runtime.turn.scripted import ScriptedDriver

pytestmark = pytest.mark.anyio


async def turn(*calls: tuple[str, dict[str, Any]]) -> dict[str, Any]:
    driver = ScriptedDriver([tool_turn(*calls)])
    async with open_session("t1", driver=driver, approver=_allow()) as s:
        out = results(await run(s, "go"))
    return {key: (r.is_error, r.content) for key, r in out.items()}


def _allow() -> Any:
    from tests.conftest import AllowAll

    return AllowAll()


async def test_write_memory_reaches_note_index_and_graph_then_search_finds_it(
    instance: InstancePaths,
) -> None:
    payload = {"applies_to": ["deploy", "disk"]}
    text = "The deploy failed because the disk on the build host was full."
    out = await turn(("write_memory", {"text": text, "category": "incident", "payload": payload}))
    error, said = out["c0"]
    assert not error and "also in the search index and graph" in said, said
    out = await turn(
        ("memory_search", {"query": "deployment broke: no space left on device", "k": 3}),
        ("graph_match", {"label": "entity", "properties": {"ref": "disk"}}),
        ("graph_query", {"cypher": "MATCH (m:Node)-[e:Edge]->(x:Node) RETURN e.relationship"}),
    )
    error, found = out["c0"]
    assert not error and "[1] memory/" in found and "build host was full" in found
    assert re.search(r"score 0\.[4-9]\d\d; found by meaning", found), found
    assert '"ref": "disk"' in out["c1"][1]
    assert '"applies_to"' in out["c2"][1]


async def test_wiki_tools_append_replace_and_list(instance: InstancePaths) -> None:
    out = await turn(
        ("wiki_write", {"page": "deploy/checklist", "text": "1. check disk"}),
        ("wiki_write", {"page": "deploy/checklist", "text": "2. run tests"}),
        ("wiki_read", {"page": "deploy/checklist"}),
        ("wiki_write", {"page": "deploy/checklist", "text": "only this", "mode": "replace"}),
        ("wiki_list", {"prefix": "deploy/"}),
        ("wiki_read", {"page": "../../etc/passwd"}),
        ("wiki_read", {"page": "missing"}),
        ("memory_search", {"query": "  "}),
        ("write_memory", {"text": " "}),
    )
    assert out["c0"] == (
        False,
        "appended to wiki/deploy/checklist (also in the search index and graph)",
    )
    read = out["c2"][1]
    assert "1. check disk\n\n<!-- panel=t1 epoch=0 turn=1 -->\n2. run tests" in read
    assert "stored memory, shown as data" in read
    assert out["c3"][1].startswith("replaced wiki/deploy/checklist")
    assert (instance.wiki / "deploy" / "checklist.md").read_text().endswith("only this\n")
    assert out["c4"] == (False, "deploy/checklist")
    assert out["c5"][0] and "lower-case letters" in out["c5"][1]
    assert out["c6"] == (False, "no wiki page 'missing'; wiki_list shows the pages")
    assert out["c7"] == (True, "memory_search: nothing to search for: the query is empty")
    assert out["c8"] == (True, "write_memory: nothing to write (empty text and no payload)")


async def test_graph_tools_link_and_walk(instance: InstancePaths) -> None:
    out = await turn(
        *[("graph_add_node", {"label": "svc", "properties": {"n": i}}) for i in range(4)]
    )
    ids = [re.match(r"node (\w+) added", out[f"c{i}"][1]).group(1) for i in range(4)]  # type: ignore[union-attr]
    a, b, c, d = ids
    out = await turn(
        ("graph_add_edge", {"from_id": a, "to_id": b, "relationship": "calls"}),
        ("graph_add_edge", {"from_id": b, "to_id": c, "relationship": "calls"}),
        ("graph_add_edge", {"from_id": a, "to_id": "nope", "relationship": "calls"}),
        ("graph_neighbors", {"node_id": a, "depth": 2}),
        ("graph_path", {"from_id": a, "to_id": c}),
        ("graph_path", {"from_id": a, "to_id": d}),
        ("graph_match", {"properties": {"n": 3}}),
        ("graph_query", {"cypher": "MATCH (n:Node) DETACH DELETE n"}),
    )
    assert not out["c0"][0] and not out["c1"][0]
    assert out["c2"][0] and "no node 'nope'" in out["c2"][1]
    assert b in out["c3"][1] and c in out["c3"][1] and d not in out["c3"][1]
    assert out["c4"] == (False, f'["{a}", "{b}", "{c}"]')
    assert out["c5"] == (False, "no path between those nodes")
    assert d in out["c6"][1] and '"provenance": "panel=t1 epoch=0 turn=' in out["c6"][1]
    assert out["c7"][0] and "graph query refused" in out["c7"][1]


async def test_switched_off_stores_have_no_tools_and_notes_still_work(
    instance: InstancePaths, configure: Callable[..., Any]
) -> None:
    configure(rag_enabled=False, graph_enabled=False)
    async with open_session("t1", driver=ScriptedDriver([]), approver=_allow()) as s:
        names = {t.name for t in s.tools}
    assert "memory_search" not in names and "graph_query" not in names
    assert {"wiki_read", "wiki_write", "wiki_list", "write_memory"} <= names
    out = await turn(("write_memory", {"text": "plain note"}))
    assert out["c0"][1].startswith("noted under 'note' in memory/")
    assert "search is off (rag_enabled is false" in out["c0"][1]
    assert "the graph is off (graph_enabled is false" in out["c0"][1]


async def test_a_broken_engine_degrades_with_one_clear_message(
    instance: InstancePaths, configure: Callable[..., Any]
) -> None:
    configure(rag_embed_url="http://127.0.0.1:9/api/embeddings", rag_embed_model="nomic-embed-text")
    (instance.root / "graph").mkdir()
    (instance.root / "graph" / "lbug_db").write_bytes(b"not a database" * 100)
    out = await turn(
        ("write_memory", {"text": "still noted"}),
        ("memory_search", {"query": "noted"}),
        ("graph_neighbors", {"node_id": "x"}),
    )
    error, said = out["c0"]
    assert not error and "not indexed:" in said and "127.0.0.1:9" in said
    assert "not linked in the graph:" in said and "graph rebuild" in said
    assert out["c1"][0] and 'rag_embed_url = ""' in out["c1"][1].replace("'", '"'), out["c1"]
    assert out["c2"][0] and "graph rebuild" in out["c2"][1]
    assert "still noted" in next(instance.memory.glob("*.md")).read_text()
    logged = (instance.root / "debug.log").read_text()
    assert logged.count("memory_engine_unavailable") == 2  # once per engine, not per call


async def test_auto_index_switches_leave_writes_to_memory_index(
    instance: InstancePaths, configure: Callable[..., Any]
) -> None:
    configure(rag_auto_index_memory=False, rag_auto_index_wiki=False)
    out = await turn(
        ("write_memory", {"text": "The cache key includes the locale."}),
        ("wiki_write", {"page": "cache", "text": "Keys carry the locale."}),
        ("memory_search", {"query": "cache key locale"}),
        ("memory_index", {}),
        ("memory_search", {"query": "cache key locale"}),
    )
    assert "search index" not in out["c0"][1] and "search index" not in out["c1"][1]
    assert out["c2"] == (False, "no memory matches 'cache key locale'")
    assert out["c3"] == (
        False,
        "search index brought up to date: 2 added, 0 updated, 0 removed, 0 unchanged",
    )
    assert "[1] " in out["c4"][1] and "[2] " in out["c4"][1]


async def test_a_wiki_category_also_appends_the_note_to_that_page(instance: InstancePaths) -> None:
    out = await turn(
        ("write_memory", {"text": "Check free disk first.", "category": "wiki/deploy/checklist"}),
        ("write_memory", {"text": "Then run the smoke test.", "category": "wiki/deploy/checklist"}),
        ("write_memory", {"text": "x", "category": "wiki/Bad_Name"}),
    )
    assert "and wiki/deploy/checklist" in out["c0"][1]
    page = (instance.wiki / "deploy" / "checklist.md").read_text()
    assert "Check free disk first." in page and page.rstrip().endswith("Then run the smoke test.")
    assert out["c2"][0] and "try 'bad-name'" in out["c2"][1]
    notes = next(instance.memory.glob("*.md")).read_text()
    assert notes.count("] wiki/deploy/checklist\n") == 2 and "Bad_Name" not in notes
