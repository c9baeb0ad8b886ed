"""What a note or a wiki page puts into the graph, for live writes and for a rebuild alike.

A note becomes a `memory_entry` node (found again by `source_path`), linked `applies_to` each
`entity` its payload names; a page becomes a `wiki_page` node (found by `ref` = slug), linked
`tagged` to a `topic_tag` per front-matter tag. Linking the same atom twice changes nothing,
so a write that is retried, or a rebuild over a graph already holding some atoms, is safe.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from runtime.memory.model import Atom
from runtime.memory.protocols import GraphStore, Progress

PREVIEW_CHARS = 200

_FRONT_MATTER = re.compile(r"\A---[ \t]*\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|\Z)", re.DOTALL)
_TAGS_LINE = re.compile(r"^tags:[ \t]*(.*)$", re.MULTILINE)


def link_note(graph: GraphStore, atom: Atom) -> str:
    """The note's `memory_entry` node id, created with its `applies_to` entities if missing."""
    found = graph.match("memory_entry", {"source_path": atom.source}, limit=1)
    if found:
        note_id = found[0].id
    else:
        properties: dict[str, Any] = {
            "preview": atom.text.strip()[:PREVIEW_CHARS],
            "source_path": atom.source,
            "category": atom.category,
        }
        if atom.provenance is not None:
            properties["panel"] = atom.provenance.panel
            properties["epoch"] = atom.provenance.epoch
            properties["turn"] = atom.provenance.turn
        note_id = graph.add_node("memory_entry", properties)
    _link_all(graph, note_id, "entity", "applies_to", "ref", applies_to(atom.payload))
    return note_id


def link_page(graph: GraphStore, atom: Atom) -> str:
    """The page's `wiki_page` node id (ref = slug), with a `tagged` edge per front-matter tag.

    A page changes (appends, replaces): its preview is refreshed and its tag edges are made
    to match its front matter now, a dropped tag unlinked."""
    slug = atom.source.removeprefix("wiki/")
    preview = atom.text.strip()[:PREVIEW_CHARS]
    page_id = graph.find_or_add_node("wiki_page", slug, {"preview": preview})
    page = graph.node(page_id)
    if page is not None and page.properties.get("preview") != preview:
        graph.set_properties(page_id, {**page.properties, "preview": preview})
    tags = front_matter_tags(atom.text)
    linked = {n.properties.get("ref") for n in graph.neighbors(page_id) if n.label == "topic_tag"}
    if linked - set(tags):
        graph.remove_edges(page_id, "tagged")
    _link_all(graph, page_id, "topic_tag", "tagged", "tag", tags)
    return page_id


def rebuild_graph(
    graph: GraphStore,
    notes: Sequence[Atom],
    pages: Sequence[Atom],
    progress: Progress | None = None,
) -> tuple[int, int]:
    """Clear the graph and link every note and page again; returns (nodes, edges)."""
    graph.clear()
    total = len(notes) + len(pages)
    for done, atom in enumerate([*notes, *pages], start=1):
        if atom.kind == "wiki":
            link_page(graph, atom)
        else:
            link_note(graph, atom)
        if progress is not None:
            progress(done, total)
    return graph.counts()


def applies_to(payload: dict[str, Any]) -> list[str]:
    """The refs of `payload["applies_to"]`: a list of strings, or one comma-separated string."""
    value = payload.get("applies_to")
    if isinstance(value, str):
        items: list[Any] = value.split(",")
    elif isinstance(value, list | tuple):
        items = list(value)
    else:
        return []
    return _distinct(str(item).strip() for item in items if item is not None)


def front_matter_tags(text: str) -> list[str]:
    """Tags of a leading `---` block: `tags: [a, b]` or `tags: a, b`."""
    block = _FRONT_MATTER.match(text)
    line = _TAGS_LINE.search(block.group(1)) if block else None
    if line is None:
        return []
    raw = line.group(1).strip()
    if raw.startswith("[") and raw.endswith("]"):
        raw = raw[1:-1]
    return _distinct(part.strip().strip("\"'").strip() for part in raw.split(","))


def _link_all(
    graph: GraphStore, from_id: str, label: str, relationship: str, key: str, refs: list[str]
) -> None:
    """Link `from_id` to a `label` node per ref, skipping those it is already linked to."""
    if not refs:
        return
    linked = {node.id for node in graph.neighbors(from_id, depth=1) if node.label == label}
    for ref in refs:
        target = graph.find_or_add_node(label, ref, {})
        if target not in linked:
            graph.add_edge(from_id, target, relationship, {key: ref})
            linked.add(target)


def _distinct(items: Any) -> list[str]:
    return list(dict.fromkeys(item for item in items if item))
