"""The memory seam: one protocol per capability (notes, wiki, index, graph) and the embedder.

Every backend passes the conformance suite of its protocol (tests/runtime/memory/), the
in-memory fakes of runtime/memory/fake.py included. All methods are synchronous and may block
(disk, an engine, an embedding model): callers on the event loop run them in a worker thread
through `Memory.run` (runtime/memory/memory.py), one at a time per instance.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal, Protocol

from runtime.memory.model import Atom, GraphNode, Hit, Provenance, QueryResult

if TYPE_CHECKING:
    from runtime.instance.config import (
        SearchMode,  # (the config's models stay out of `mnemara note`)
    )

# Called as work proceeds: (done, total).
Progress = Callable[[int, int], None]
WikiMode = Literal["append", "replace"]


class NoteStore(Protocol):
    """Dated, append-only notes (`memory/YYYY-MM-DD.md`)."""

    def append(
        self,
        text: str,
        category: str = "note",
        payload: Mapping[str, Any] | None = None,
        provenance: Provenance | None = None,
        now: datetime | None = None,
    ) -> Atom:
        """Append one note block; the atom names its source. Never rewrites earlier notes."""
        ...

    def atoms(self, since: datetime | None = None) -> list[Atom]:
        """Notes written at or after `since` (None: all), oldest first, archived ones left out."""
        ...

    def archive(self, sources: Sequence[str], reason: str) -> list[str]:
        """Set atoms aside (kept in `memory/archive/`, left out of `atoms`); returns them."""
        ...

    def restore(self, sources: Sequence[str]) -> list[str]:
        """Undo `archive` for these sources; returns those restored."""
        ...

    def archived(self) -> list[str]:
        """The sources currently archived."""
        ...

    def restored(self) -> list[str]:
        """The sources archived once and restored since: replay does not archive them again."""
        ...


class WikiStore(Protocol):
    """Topic pages (`wiki/<slug>.md`), slugs checked by runtime/memory/slugs.py."""

    def read(self, slug: str) -> str | None:
        """The page's text, or None when there is no such page."""
        ...

    def write(
        self, slug: str, text: str, mode: WikiMode = "append", provenance: Provenance | None = None
    ) -> Atom:
        """Append to the page (created if missing), or replace it when `mode` is "replace"."""
        ...

    def pages(self, prefix: str = "") -> list[str]:
        """Slugs of the pages under `prefix` (a slug prefix, "" for all), sorted."""
        ...

    def atoms(self) -> list[Atom]:
        """One atom per page, source `wiki/<slug>`."""
        ...


class Embedder(Protocol):
    """Text to unit-length vectors. An index stores `name`; another embedder needs a reindex."""

    name: str
    dims: int

    def embed(self, texts: Sequence[str]) -> list[list[float]]: ...


class VectorIndex(Protocol):
    """Search over atoms by meaning and by words, keyed by source (an upsert replaces every row
    of a source; a deleted or replaced text is not found by its old words)."""

    def upsert(self, atoms: Sequence[Atom], progress: Progress | None = None) -> int:
        """Index these atoms, replacing earlier rows of the same sources; returns rows written."""
        ...

    def delete(self, sources: Sequence[str]) -> int:
        """Remove every row of these sources; returns rows removed."""
        ...

    def search(
        self,
        query: str,
        k: int = 5,
        *,
        kind: str | None = None,
        include_quarantined: bool = False,
        mode: SearchMode = "hybrid",
    ) -> list[Hit]:
        """The k best atoms for `query`, best first, each saying why it matched.

        "vector": the nearest by cosine distance, nearest first. "hybrid": those and the
        atoms holding the query's words (ids, numbers, versions, names), fused by rank
        (runtime/memory/fulltext.py); every hit still carries its cosine distance.
        MemoryStoreError for another mode."""
        ...

    def digests(self) -> dict[str, str]:
        """Source -> `Atom.digest()` of what is indexed (reindex skips unchanged atoms)."""
        ...

    def set_quarantined(self, sources: Sequence[str], quarantined: bool) -> int:
        """Mark or release sources; quarantined rows are left out of `search` by default."""
        ...

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """The index's own embedder (replay clusters with the vectors search uses)."""
        ...

    def count(self) -> int: ...

    def close(self) -> None: ...


class GraphStore(Protocol):
    """The property graph: `Node(id, label, properties, created_at)` and `Edge` between nodes."""

    def add_node(
        self, label: str, properties: Mapping[str, Any], node_id: str | None = None
    ) -> str: ...

    def find_or_add_node(self, label: str, ref: str, properties: Mapping[str, Any]) -> str:
        """The node with this label whose `ref` property equals `ref`, created if missing."""
        ...

    def add_edge(
        self, from_id: str, to_id: str, relationship: str, properties: Mapping[str, Any]
    ) -> str:
        """Link two existing nodes (MemoryStoreError if either is missing); returns the edge id."""
        ...

    def node(self, node_id: str) -> GraphNode | None: ...

    def set_properties(self, node_id: str, properties: Mapping[str, Any]) -> None:
        """Replace a node's properties (MemoryStoreError if there is no such node)."""
        ...

    def remove_edges(self, from_id: str, relationship: str) -> int:
        """Remove the edges of `relationship` leaving `from_id`; returns how many went."""
        ...

    def neighbors(self, node_id: str, depth: int = 1) -> list[GraphNode]:
        """Distinct nodes within `depth` hops (either direction), the start node left out."""
        ...

    def match(
        self, label: str | None, properties: Mapping[str, Any], limit: int = 100
    ) -> list[GraphNode]:
        """Nodes with this label (any when None) whose properties hold every given key with an
        equal JSON value (strings, numbers, booleans, null, lists and objects alike)."""
        ...

    def path(self, from_id: str, to_id: str, max_hops: int = 30) -> list[str] | None:
        """Node ids of a shortest path (either direction), or None when there is none."""
        ...

    def query(self, cypher: str, params: Mapping[str, Any] | None = None) -> QueryResult:
        """A read-only Cypher query (runtime/policy/cypher.py refuses anything else)."""
        ...

    def counts(self) -> tuple[int, int]:
        """(nodes, edges)."""
        ...

    def clear(self) -> None:
        """Remove every node and edge (before a rebuild from notes and wiki)."""
        ...

    def close(self) -> None: ...


__all__ = [
    "Atom",
    "Embedder",
    "GraphNode",
    "GraphStore",
    "Hit",
    "NoteStore",
    "Progress",
    "QueryResult",
    "VectorIndex",
    "WikiMode",
    "WikiStore",
]
