"""In-memory memory stores for tests: each passes its protocol's conformance suite.

`FakeEmbedder` is deterministic (a hashed bag of words, unit length), so tests can say which
texts are near each other without loading a model: texts sharing words are near.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import uuid
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from runtime.errors import MemoryStoreError
from runtime.instance.config import SearchMode
from runtime.memory.fulltext import (
    Candidate,
    check_mode,
    cosine_distance,
    fuse,
    pool_size,
    query_words,
    rank_by_words,
)
from runtime.memory.model import Atom, GraphNode, Hit, Provenance, QueryResult
from runtime.memory.notes import parse_day, render_block, written_at
from runtime.memory.protocols import Progress, WikiMode
from runtime.memory.slugs import check_slug
from runtime.memory.wiki import page_atom, section
from runtime.policy.cypher import require_read_only


class FakeNotes:
    def __init__(self) -> None:
        self._days: dict[str, str] = {}
        self._archived: dict[str, bool] = {}

    def append(
        self,
        text: str,
        category: str = "note",
        payload: Mapping[str, Any] | None = None,
        provenance: Provenance | None = None,
        now: datetime | None = None,
    ) -> Atom:
        when = now or datetime.now(UTC)
        block = render_block(text, " ".join(category.split()) or "note", payload, provenance, when)
        day = f"{when.date().isoformat()}.md"
        self._days[day] = self._days.get(day, "") + block
        return parse_day(day, self._days[day])[-1]  # a repeated block has its own source

    def atoms(self, since: datetime | None = None) -> list[Atom]:
        found = []
        for day in sorted(self._days):
            for atom in parse_day(day, self._days[day]):
                when = written_at(atom)
                if self._archived.get(atom.source) or (since and when and when < since):
                    continue
                found.append(atom)
        return found

    def archive(self, sources: Sequence[str], reason: str) -> list[str]:
        live = {atom.source for atom in self.atoms()}
        done = [s for s in dict.fromkeys(sources) if s in live]
        self._archived.update(dict.fromkeys(done, True))
        return done

    def restore(self, sources: Sequence[str]) -> list[str]:
        done = [s for s in dict.fromkeys(sources) if self._archived.get(s)]
        self._archived.update(dict.fromkeys(done, False))
        return done

    def archived(self) -> list[str]:
        return [s for s, hidden in self._archived.items() if hidden]

    def restored(self) -> list[str]:
        return [s for s, hidden in self._archived.items() if not hidden]


class FakeWiki:
    def __init__(self) -> None:
        self.texts: dict[str, str] = {}

    def read(self, slug: str) -> str | None:
        return self.texts.get(check_slug(slug))

    def write(
        self, slug: str, text: str, mode: WikiMode = "append", provenance: Provenance | None = None
    ) -> Atom:
        slug = check_slug(slug)
        if not text.strip():
            raise MemoryStoreError(f"wiki page {slug!r}: nothing to write (empty text)")
        addition = section(text, provenance)
        old = self.texts.get(slug)
        if mode == "append" and old:
            self.texts[slug] = old + "\n" + addition
        elif mode in ("append", "replace"):
            self.texts[slug] = addition
        else:
            raise MemoryStoreError(f"wiki page {slug!r}: mode must be 'append' or 'replace'")
        return page_atom(slug, self.texts[slug], datetime.now(UTC).isoformat(timespec="seconds"))

    def pages(self, prefix: str = "") -> list[str]:
        wanted = prefix.strip().lstrip("/").lower()
        return sorted(slug for slug in self.texts if slug.startswith(wanted))

    def atoms(self) -> list[Atom]:
        return [page_atom(slug, self.texts[slug]) for slug in self.pages()]


class FakeEmbedder:
    name = "fake"
    dims = 64

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        vectors = []
        for text in texts:
            vector = [0.0] * self.dims
            for word in re.findall(r"[a-z0-9]+", text.lower()):
                slot = int.from_bytes(hashlib.sha256(word.encode()).digest()[:4], "big")
                vector[slot % self.dims] += 1.0
            norm = math.sqrt(sum(v * v for v in vector)) or 1.0
            vectors.append([v / norm for v in vector])
        return vectors


class FakeIndex:
    def __init__(self, embedder: FakeEmbedder | None = None) -> None:
        self.embedder = embedder or FakeEmbedder()
        self.rows: dict[str, tuple[Atom, list[float]]] = {}
        self.quarantined: set[str] = set()

    def upsert(self, atoms: Sequence[Atom], progress: Progress | None = None) -> int:
        vectors = self.embedder.embed([atom.text for atom in atoms])
        for done, (atom, vector) in enumerate(zip(atoms, vectors, strict=True), 1):
            self.rows[atom.source] = (atom, vector)
            if progress:
                progress(done, len(atoms))
        return len(atoms)

    def delete(self, sources: Sequence[str]) -> int:
        gone = [s for s in set(sources) if self.rows.pop(s, None)]
        self.quarantined.difference_update(gone)
        return len(gone)

    def search(
        self,
        query: str,
        k: int = 5,
        *,
        kind: str | None = None,
        include_quarantined: bool = False,
        mode: SearchMode = "hybrid",
    ) -> list[Hit]:
        check_mode(mode)
        (probe,) = self.embedder.embed([query])
        wanted = max(1, min(k, 100))
        near = []
        for source, (atom, vector) in self.rows.items():
            if kind is not None and atom.kind != kind:
                continue
            if source in self.quarantined and not include_quarantined:
                continue
            distance = cosine_distance(probe, vector)
            near.append(Candidate(source, atom.kind, atom.text, atom.category, distance))
        near.sort(key=lambda hit: (hit.distance, hit.source))
        words = query_words(query) if mode == "hybrid" else []
        if not words:
            return [Hit(c.source, c.kind, c.text, c.category, c.distance) for c in near[:wanted]]
        # The word side sees the same filtered atoms as the vector side.
        by_source = {candidate.source: candidate for candidate in near}
        ranked = rank_by_words({c.source: c.text for c in near}, words)
        by_words = [(by_source[source], score) for source, score in ranked]
        pool = pool_size(wanted)
        return fuse(near[:pool], by_words[:pool], words, wanted)

    def digests(self) -> dict[str, str]:
        return {source: atom.digest() for source, (atom, _) in self.rows.items()}

    def set_quarantined(self, sources: Sequence[str], quarantined: bool) -> int:
        known = [s for s in set(sources) if s in self.rows]
        if quarantined:
            self.quarantined.update(known)
        else:
            self.quarantined.difference_update(known)
        return len(known)

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return self.embedder.embed(texts)

    def count(self) -> int:
        return len(self.rows)

    def close(self) -> None:
        pass


class FakeGraph:
    def __init__(self) -> None:
        self.nodes: dict[str, GraphNode] = {}
        self.edges: list[tuple[str, str, str, str]] = []  # (id, from, to, relationship)

    def add_node(
        self, label: str, properties: Mapping[str, Any], node_id: str | None = None
    ) -> str:
        node_id = node_id or uuid.uuid4().hex
        if node_id in self.nodes:
            raise MemoryStoreError(f"graph node {node_id!r} already exists")
        stamp = datetime.now(UTC).isoformat()
        self.nodes[node_id] = GraphNode(node_id, label, json.loads(json.dumps(properties)), stamp)
        return node_id

    def find_or_add_node(self, label: str, ref: str, properties: Mapping[str, Any]) -> str:
        for node in self.nodes.values():
            if node.label == label and node.properties.get("ref") == ref:
                return node.id
        return self.add_node(label, {**properties, "ref": ref})

    def add_edge(
        self, from_id: str, to_id: str, relationship: str, properties: Mapping[str, Any]
    ) -> str:
        for node_id in (from_id, to_id):
            if node_id not in self.nodes:
                raise MemoryStoreError(f"graph node {node_id!r} does not exist")
        edge_id = uuid.uuid4().hex
        self.edges.append((edge_id, from_id, to_id, relationship))
        return edge_id

    def node(self, node_id: str) -> GraphNode | None:
        return self.nodes.get(node_id)

    def set_properties(self, node_id: str, properties: Mapping[str, Any]) -> None:
        node = self.nodes.get(node_id)
        if node is None:
            raise MemoryStoreError(f"graph node {node_id!r} does not exist")
        fresh = json.loads(json.dumps(properties))
        self.nodes[node_id] = GraphNode(node.id, node.label, fresh, node.created_at)

    def remove_edges(self, from_id: str, relationship: str) -> int:
        kept = [e for e in self.edges if not (e[1] == from_id and e[3] == relationship)]
        gone = len(self.edges) - len(kept)
        self.edges = kept
        return gone

    def _adjacent(self, node_id: str) -> list[str]:
        return [b if a == node_id else a for _, a, b, _ in self.edges if node_id in (a, b)]

    def neighbors(self, node_id: str, depth: int = 1) -> list[GraphNode]:
        seen = {node_id}
        frontier = [node_id]
        found: list[str] = []
        for _ in range(max(1, min(depth, 30))):
            frontier = [n for f in frontier for n in self._adjacent(f) if n not in seen]
            frontier = list(dict.fromkeys(frontier))
            seen.update(frontier)
            found += frontier
        return [self.nodes[n] for n in found]

    def match(
        self, label: str | None, properties: Mapping[str, Any], limit: int = 100
    ) -> list[GraphNode]:
        def same(a: Any, b: Any) -> bool:
            return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True) or (
                type(a) in (int, float) and type(b) in (int, float) and a == b
            )

        found = [
            node
            for node in self.nodes.values()
            if (label is None or node.label == label)
            and all(
                k in node.properties and same(node.properties[k], v) for k, v in properties.items()
            )
        ]
        return found[: max(1, limit)]

    def path(self, from_id: str, to_id: str, max_hops: int = 30) -> list[str] | None:
        if from_id not in self.nodes or to_id not in self.nodes:
            return None
        previous: dict[str, str | None] = {from_id: None}
        frontier = [from_id]
        for _ in range(max(1, min(max_hops, 30))):
            if to_id in previous:
                break
            step = []
            for node_id in frontier:
                for n in self._adjacent(node_id):
                    if n not in previous:
                        previous[n] = node_id
                        step.append(n)
            frontier = step
        if to_id not in previous:
            return None
        way: list[str] = []
        cursor: str | None = to_id
        while cursor is not None:
            way.append(cursor)
            cursor = previous[cursor]
        return way[::-1]

    def query(self, cypher: str, params: Mapping[str, Any] | None = None) -> QueryResult:
        require_read_only(cypher)
        # The fake understands one query, enough for tool and replay tests: count nodes.
        if re.fullmatch(r"\s*MATCH \(n\) RETURN count\(n\) AS nodes\s*;?\s*", cypher):
            return QueryResult(["nodes"], [{"nodes": len(self.nodes)}])
        raise MemoryStoreError("the fake graph runs only MATCH (n) RETURN count(n) AS nodes")

    def counts(self) -> tuple[int, int]:
        return len(self.nodes), len(self.edges)

    def clear(self) -> None:
        self.nodes.clear()
        self.edges.clear()

    def close(self) -> None:
        pass
