"""The agent's reading and writing of its memory: the wiki, search, and the property graph.

`wiki_read`, `wiki_write` and `wiki_list` always (pages are files); `memory_search` (in
config.json's `rag_search_mode` unless the call names one) and `memory_index` when
`rag_enabled`; the `graph_*` tools when `graph_enabled` (the tool list is fixed when a session
opens: changing it would break the prompt cache). A page named
`team/...`, or `scope: "team"` on a graph tool, reaches the team's shared memory when the
team has one. Everything read back is rendered as data (runtime/memory/render.py).
"""

from __future__ import annotations

import json
import re
from typing import Any

from runtime.errors import MemoryStoreError
from runtime.memory import GraphNode, Memory, QueryResult
from runtime.memory.fulltext import SEARCH_MODES
from runtime.memory.memory import sync_index
from runtime.memory.render import clean, render_hits, render_page
from runtime.tools.context import ToolContext
from runtime.tools.params import Args, Param, define, ok
from runtime.turn.driver import ToolOutput, ToolSpec

MAX_LABEL = 80
NODE_ID = re.compile(r"[A-Za-z0-9_.:-]{1,80}")
MAX_PROPERTIES = 10_000  # characters of JSON per node or edge
TEAM_PREFIX = "team/"
SCOPE = Param(
    "scope",
    "string",
    "Your own memory, or the team's shared memory (when the team has one).",
    choices=("own", "team"),
    default="own",
)


def _memory(ctx: ToolContext, team: bool) -> Memory:
    if not team:
        return ctx.memory
    if ctx.shared_memory is None:
        raise MemoryStoreError(
            "this panel's team has no shared memory ([team] memory in the team file)"
        )
    return ctx.shared_memory


def _page(ctx: ToolContext, slug: str) -> tuple[Memory, str]:
    """The memory a page name addresses, and the name within it."""
    if slug.strip().lower().startswith(TEAM_PREFIX):
        return _memory(ctx, True), slug.strip()[len(TEAM_PREFIX) :]
    return ctx.memory, slug


def _nodes(memory: Memory, nodes: list[GraphNode]) -> str:
    """Nodes as JSON; in shared memory, those a halted turn made are marked quarantined."""
    shown = []
    for node in nodes:
        item = vars(node).copy()
        mark = node.properties.get("provenance")
        if memory.quarantine is not None and isinstance(mark, str):
            item["quarantined"] = memory.quarantine.holds_mark(mark)
        shown.append(item)
    return _json(shown)


def _json(value: Any, limit: int = 20_000) -> str:
    return clean(json.dumps(value, sort_keys=True, ensure_ascii=False, default=str), limit)


def _properties(value: dict[str, Any], what: str) -> dict[str, Any]:
    if len(json.dumps(value)) > MAX_PROPERTIES:
        raise MemoryStoreError(f"{what} are longer than {MAX_PROPERTIES:,} characters of JSON")
    return value


def _name(value: str, what: str) -> str:
    value = " ".join(value.split())
    if not value or len(value) > MAX_LABEL:
        raise MemoryStoreError(f"{what} must be 1 to {MAX_LABEL} characters")
    return value


def wiki_tools(ctx: ToolContext) -> list[ToolSpec]:
    async def wiki_read(a: Args) -> ToolOutput:
        memory, slug = _page(ctx, a["page"])
        text = await memory.run(memory.wiki.read, slug)
        if text is None:
            return ok(f"no wiki page {clean(a['page'], 200)!r}; wiki_list shows the pages")
        if memory.quarantine is not None:
            text = memory.quarantine.mask(text)
        return ok(render_page(a["page"], text))

    async def wiki_write(a: Args) -> ToolOutput:
        memory, slug = _page(ctx, a["page"])
        written = await memory.run(memory.write_page, slug, a["text"], a["mode"], ctx.provenance())
        verb = "replaced" if a["mode"] == "replace" else "appended to"
        return ok(f"{verb} {written.atom.source}{written.summary()}")

    async def wiki_list(a: Args) -> ToolOutput:
        memory, prefix = _page(ctx, a["prefix"])
        pages = await memory.run(memory.wiki.pages, prefix)
        team = TEAM_PREFIX if memory is not ctx.memory else ""
        if not pages:
            return ok("no wiki pages" + (f" under {clean(a['prefix'], 200)!r}" if prefix else ""))
        return ok("\n".join(team + page for page in pages))

    page = Param(
        "page", "string", "Page name: lower-case words, '-' and '/', e.g. deploy/checklist.",
        required=True,
    )  # fmt: skip
    return [
        define("wiki_read", "Read a wiki page (wiki/<page>.md).", [page], wiki_read),
        define(
            "wiki_write",
            "Write a wiki page: append (the default) or, only when you mean to, replace the "
            "whole page. Pages named team/... are the team's shared wiki.",
            [
                page,
                Param("text", "string", "The Markdown to write.", required=True),
                Param(
                    "mode",
                    "string",
                    "append adds to the page; replace overwrites all of it.",
                    choices=("append", "replace"),
                    default="append",
                ),
            ],
            wiki_write,
        ),
        define(
            "wiki_list",
            "List wiki pages, optionally under a prefix (team/ lists the shared wiki).",
            [Param("prefix", "string", "Only pages whose name starts so.", default="")],
            wiki_list,
        ),
    ]


def search_tools(ctx: ToolContext) -> list[ToolSpec]:
    async def memory_search(a: Args) -> ToolOutput:
        kind = None if a["kind"] == "any" else a["kind"]
        memory = _memory(ctx, a["scope"] == "team")
        hits = await memory.run(memory.search, a["query"], a["k"], kind, a["mode"])
        return ok(render_hits(a["query"], hits))

    async def memory_index(a: Args) -> ToolOutput:
        memory = _memory(ctx, a["scope"] == "team")
        synced = await memory.run(sync_index, memory)
        return ok(f"search index brought up to date: {synced}")

    return [
        define(
            "memory_search",
            "Search your notes and wiki pages by meaning and by exact words (ids, numbers, "
            "versions, names); returns the best with their sources and scores.",
            [
                Param("query", "string", "What you are looking for, in words.", required=True),
                Param("k", "integer", "How many results.", minimum=1, maximum=20, default=5),
                Param(
                    "kind",
                    "string",
                    "Only notes, only wiki pages, or any.",
                    choices=("any", "note", "wiki"),
                    default="any",
                ),
                Param(
                    "mode",
                    "string",
                    "hybrid: by meaning and by the query's exact words; vector: by meaning only.",
                    choices=SEARCH_MODES,
                    default=ctx.config.rag_search_mode,  # config.json's choice
                ),
                SCOPE,
            ],
            memory_search,
        ),
        define(
            "memory_index",
            "Bring the search index up to date with your notes and wiki pages (only new or "
            "changed ones are embedded; rows of deleted pages are dropped).",
            [SCOPE],
            memory_index,
        ),
    ]


def graph_tools(ctx: ToolContext) -> list[ToolSpec]:
    async def graph_add_node(a: Args) -> ToolOutput:
        memory = _memory(ctx, a["scope"] == "team")
        label = _name(a["label"], "label")
        properties = _properties(a["properties"] or {}, "properties")
        properties = {**properties, "provenance": ctx.provenance().render()}
        wanted = a["id"] or None
        if wanted is not None and not NODE_ID.fullmatch(wanted):
            raise MemoryStoreError("id must be 1 to 80 letters, digits, '-', '_', '.' or ':'")
        graph = await memory.run(memory.graph)
        if wanted is not None and await memory.run(graph.node, wanted) is not None:
            raise MemoryStoreError(f"a node with id {wanted!r} already exists")
        node_id = await memory.run(graph.add_node, label, properties, wanted)
        return ok(f"node {node_id} added")

    async def graph_add_edge(a: Args) -> ToolOutput:
        memory = _memory(ctx, a["scope"] == "team")
        relationship = _name(a["relationship"], "relationship")
        properties = _properties(a["properties"] or {}, "properties")
        properties = {**properties, "provenance": ctx.provenance().render()}
        graph = await memory.run(memory.graph)
        edge_id = await memory.run(
            graph.add_edge, a["from_id"], a["to_id"], relationship, properties
        )
        return ok(f"edge {edge_id} added")

    async def graph_neighbors(a: Args) -> ToolOutput:
        memory = _memory(ctx, a["scope"] == "team")
        graph = await memory.run(memory.graph)
        nodes = await memory.run(graph.neighbors, a["node_id"], a["depth"])
        return ok(_nodes(memory, nodes))

    async def graph_match(a: Args) -> ToolOutput:
        memory = _memory(ctx, a["scope"] == "team")
        graph = await memory.run(memory.graph)
        label = a["label"] or None
        nodes = await memory.run(graph.match, label, a["properties"] or {}, a["limit"])
        return ok(_nodes(memory, nodes))

    async def graph_path(a: Args) -> ToolOutput:
        memory = _memory(ctx, a["scope"] == "team")
        graph = await memory.run(memory.graph)
        way = await memory.run(graph.path, a["from_id"], a["to_id"], a["max_hops"])
        return ok(_json(way) if way is not None else "no path between those nodes")

    async def graph_query(a: Args) -> ToolOutput:
        memory = _memory(ctx, a["scope"] == "team")
        graph = await memory.run(memory.graph)
        result: QueryResult = await memory.run(graph.query, a["cypher"], a["params"] or {})
        return ok(_json({"columns": result.columns, "rows": result.rows}))

    node_id = "A node id (graph_add_node returned it)."
    properties = Param("properties", "object", "Properties: any JSON values.")
    return [
        define(
            "graph_add_node",
            "Add a node to the property graph; returns its id.",
            [
                Param("label", "string", "What kind of thing.", required=True),
                properties,
                Param("id", "string", "An id of your choosing (default: a new random one)."),
                SCOPE,
            ],
            graph_add_node,
        ),
        define(
            "graph_add_edge",
            "Link two nodes with a named relationship; returns the edge id.",
            [
                Param("from_id", "string", node_id, required=True),
                Param("to_id", "string", node_id, required=True),
                Param("relationship", "string", "The relationship's name.", required=True),
                properties,
                SCOPE,
            ],
            graph_add_edge,
        ),
        define(
            "graph_neighbors",
            "Nodes linked to a node, within `depth` hops, either direction.",
            [
                Param("node_id", "string", node_id, required=True),
                Param("depth", "integer", "Hops.", minimum=1, maximum=5, default=1),
                SCOPE,
            ],
            graph_neighbors,
        ),
        define(
            "graph_match",
            "Nodes with a label and/or properties equal to the given JSON values.",
            [
                Param("label", "string", "Only nodes with this label.", default=""),
                properties,
                Param("limit", "integer", "At most this many.", minimum=1, maximum=500, default=50),
                SCOPE,
            ],
            graph_match,
        ),
        define(
            "graph_path",
            "A shortest path between two nodes, as node ids.",
            [
                Param("from_id", "string", node_id, required=True),
                Param("to_id", "string", node_id, required=True),
                Param(
                    "max_hops",
                    "integer",
                    "Longest path looked for.",
                    minimum=1,
                    maximum=30,
                    default=10,
                ),
                SCOPE,
            ],
            graph_path,
        ),
        define(
            "graph_query",
            "Run one read-only Cypher query (MATCH ... RETURN); values go in params as "
            "$name. Writes, file access, extensions and ATTACH are refused.",
            [
                Param("cypher", "string", "The query.", required=True),
                Param("params", "object", "Query parameters ($name -> value)."),
                SCOPE,
            ],
            graph_query,
        ),
    ]
