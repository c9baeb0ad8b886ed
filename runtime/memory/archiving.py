"""Archive and restore notes in one step: the ledger, the search index and the graph together.

The ledger (`memory/archive/archived.jsonl`) is the record; the index and the graph follow it
at once, so a search right after `replay --apply` or `memory archive` never returns what was
just set aside, and a restored note is found again without a separate `memory index`.

- Index: an archived note's row is deleted; a restored note is embedded again by a sync
  (only what changed is embedded).
- Graph: an archived note's `memory_entry` node is kept, with its edges, and marked
  `archived` (the reason and the time in its properties); restoring removes the mark. Nodes
  and edges an agent added by hand stay where they are either way.

An engine that is off or cannot be opened is reported, never raised: the ledger already
holds the change, and `mnemara memory index` or `mnemara memory graph rebuild` catch up later.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from runtime.errors import EngineUnavailableError
from runtime.memory.memory import Memory, Synced, sync_index
from runtime.memory.protocols import GraphStore, Progress

ARCHIVED = "archived"  # the graph property that marks an archived note's node
ARCHIVED_REASON = "archived_reason"


@dataclass
class Settled:
    """What the index and the graph did after the ledger changed."""

    sources: list[str]
    removed: int = 0  # index rows deleted (archive)
    synced: Synced | None = None  # the index sync (restore)
    marked: int = 0  # graph nodes marked or unmarked
    problems: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        said = []
        if self.synced is not None:
            said.append(f"search index: {self.synced}")
        elif self.removed:
            said.append(f"search index: {self.removed} removed")
        if self.marked:
            said.append(f"graph: {self.marked} note node{'' if self.marked == 1 else 's'} updated")
        return said + [f"note: {problem}" for problem in self.problems]


def archive_notes(memory: Memory, sources: Sequence[str], reason: str) -> Settled:
    """Archive `sources` in the ledger, then drop them from the index and mark them in the graph.

    Returns what was archived now (sources already archived are left out) and what followed."""
    done = memory.notes.archive(sources, reason)
    return settle_archived(memory, done, reason)


def settle_archived(memory: Memory, sources: Sequence[str], reason: str) -> Settled:
    """Bring the index and the graph in line with `sources` just archived in the ledger."""
    settled = Settled(list(sources))
    if not sources:
        return settled
    if memory.config.rag_enabled:
        try:
            settled.removed = memory.index().delete(list(sources))
        except Exception as exc:  # the ledger holds the archive; the index catches up later
            settled.problems.append(f"search index not updated: {_why(exc)}")
    at = datetime.now(UTC).isoformat(timespec="seconds")
    settled.marked, problem = _mark(memory, sources, {ARCHIVED: at, ARCHIVED_REASON: reason})
    if problem:
        settled.problems.append(problem)
    return settled


def restore_notes(
    memory: Memory, sources: Sequence[str], progress: Progress | None = None
) -> Settled:
    """Restore `sources` in the ledger, embed them again and lift their mark in the graph."""
    done = memory.notes.restore(sources)
    settled = Settled(done)
    if not done:
        return settled
    if memory.config.rag_enabled:
        try:
            settled.synced = sync_index(memory, progress)
        except Exception as exc:
            settled.problems.append(
                f"search index not updated: {_why(exc)} (`mnemara memory index` catches up)"
            )
    settled.marked, problem = _mark(memory, done, None)
    if problem:
        settled.problems.append(problem)
    return settled


def _mark(
    memory: Memory, sources: Sequence[str], mark: dict[str, str] | None
) -> tuple[int, str | None]:
    """Set (or, with None, lift) the archive mark on each source's `memory_entry` node."""
    if not memory.config.graph_enabled:
        return 0, None
    try:
        graph = memory.graph()
        return sum(_mark_one(graph, source, mark) for source in sources), None
    except Exception as exc:
        return 0, f"graph not updated: {_why(exc)} (`mnemara memory graph rebuild` catches up)"


def _mark_one(graph: GraphStore, source: str, mark: dict[str, str] | None) -> int:
    changed = 0
    for node in graph.match("memory_entry", {"source_path": source}, limit=10):
        properties = {
            key: value
            for key, value in node.properties.items()
            if key not in (ARCHIVED, ARCHIVED_REASON)
        }
        if mark is not None:
            properties.update(mark)
        if properties != node.properties:
            graph.set_properties(node.id, properties)
            changed += 1
    return changed


def _why(exc: Exception) -> str:
    if isinstance(exc, EngineUnavailableError):
        return str(exc)
    return f"{type(exc).__name__}: {exc}"
