"""One instance's memory: notes and wiki always, the search index and the graph when they can be.

`open_memory` gives a `Memory` whose engines open on first use, so a session that never
searches or links never imports LanceDB, the embedder or the graph engine. An engine that is
switched off, missing or broken raises EngineUnavailableError with one message, logged once
and given again for a minute before the engine is tried anew; notes and the wiki go on
working without it.

`remember` and `write_page` are the write-to-all paths of `write_memory` and `wiki_write`:
the note or page first (it is the record), then the index and the graph as the config
allows. A failure after the record is reported back, never raised: the write happened.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import anyio
import anyio.to_thread

from runtime.errors import EngineUnavailableError, MemoryStoreError
from runtime.instance.config import InstanceConfig, SearchMode
from runtime.instance.debuglog import DebugLog
from runtime.instance.home import InstancePaths
from runtime.memory.fulltext import check_mode
from runtime.memory.model import Atom, Hit, Provenance
from runtime.memory.notes import FileNotes
from runtime.memory.pending import Pending, catch_up, write_record
from runtime.memory.protocols import (
    GraphStore,
    NoteStore,
    Progress,
    VectorIndex,
    WikiMode,
    WikiStore,
)
from runtime.memory.quarantine import Key, Quarantine
from runtime.memory.wiki import FileWiki

T = TypeVar("T")
RETRY_AFTER = 60.0  # seconds a failed engine open is reported from memory before a new try
IndexOpener = Callable[[], VectorIndex]
GraphOpener = Callable[[], GraphStore]


@dataclass
class Written:
    """What a write reached: the record (note or page), then the index and the graph."""

    atom: Atom
    page: Atom | None = None
    indexed: bool = False
    linked: bool = False
    problems: list[str] = field(default_factory=list)

    def summary(self) -> str:
        reached = ["search index"] * self.indexed + ["graph"] * self.linked
        text = f" (also in the {' and '.join(reached)})" if reached else ""
        return text + "".join(f"; {problem}" for problem in self.problems)


class Memory:
    def __init__(
        self,
        *,
        notes: NoteStore,
        wiki: WikiStore,
        config: InstanceConfig,
        open_index: IndexOpener,
        open_graph: GraphOpener,
        debug: DebugLog | None = None,
        quarantine: Quarantine | None = None,
        clock: Callable[[], float] = time.monotonic,
        pending: Pending | None = None,
        read_only: bool = False,
    ) -> None:
        self.notes = notes
        self.wiki = wiki
        self.config = config
        self.debug = debug
        self._open_index = open_index
        self._open_graph = open_graph
        self._index: VectorIndex | None = None
        self._graph: GraphStore | None = None
        self._broken: dict[str, tuple[EngineUnavailableError, float]] = {}
        self._clock = clock
        # A team's shared memory: what a halted turn wrote stays out of search until released.
        self.quarantine = quarantine
        self._quarantine_seen: frozenset[Key] | None = None
        # One engine call at a time per instance: neither engine is promised to be
        # thread-safe, and worker threads differ from call to call.
        self.limiter = anyio.CapacityLimiter(1)
        # Notes `mnemara note` wrote without the engines: indexed and linked by the first
        # process that opens an engine for writing (never by a read-only one).
        self.pending = pending
        self.read_only = read_only
        self._catching_up = False

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        """Run a blocking memory call in a worker thread, after any other one of this memory."""
        return await anyio.to_thread.run_sync(partial(fn, *args), limiter=self.limiter)

    # -- engines, opened on first use ---------------------------------------------------------

    def index(self) -> VectorIndex:
        if self._index is None:
            if not self.config.rag_enabled:
                raise EngineUnavailableError(
                    "search is off (rag_enabled is false in config.json)", store="index"
                )
            self._index = self._opened("index", self._open_index)
        held = frozenset(self.quarantine.keys()) if self.quarantine is not None else None
        if held is not None and self._quarantine_seen != held:
            self._quarantine_seen = held
            sync_index(self)  # a turn was quarantined or released since the last look
        self.catch_up()
        return self._index

    def search(
        self, query: str, k: int = 5, kind: str | None = None, mode: SearchMode | None = None
    ) -> list[Hit]:
        """The best notes and pages for `query`, by meaning and words ("hybrid") or by meaning
        only ("vector"); `mode` None is config.json's `rag_search_mode`. Each hit says why it
        matched (`Hit.matched`). MemoryStoreError for an empty query or an unknown mode."""
        if not query.strip():
            raise MemoryStoreError("nothing to search for: the query is empty")
        mode = self.config.rag_search_mode if mode is None else mode
        check_mode(mode)
        index = self.index()
        if not index.count():
            return []
        # An archived note leaves the index at its next sync; until then it is left out here,
        # and a restored one is found again at once (its row is still there).
        hidden = set(self.notes.archived())
        hits = index.search(query, k + len(hidden), kind=kind, mode=mode)
        return [hit for hit in hits if hit.source not in hidden][:k]

    def indexable(self, atom: Atom) -> Atom:
        """The atom as search may see it: a quarantined wiki section masked."""
        if self.quarantine is not None and atom.kind == "wiki":
            return replace(atom, text=self.quarantine.mask(atom.text))
        return atom

    def graph(self) -> GraphStore:
        if self._graph is None:
            if not self.config.graph_enabled:
                raise EngineUnavailableError(
                    "the graph is off (graph_enabled is false in config.json)", store="graph"
                )
            self._graph = self._opened("graph", self._open_graph)
        self.catch_up()
        return self._graph

    def catch_up(self) -> None:
        """Index and link the notes `mnemara note` left waiting (pending.py), once each."""
        if self.pending is None or self.read_only or self._catching_up:
            return
        self._catching_up = True  # catching up opens the engines, which come back here
        try:
            catch_up(self, self.pending)
        finally:
            self._catching_up = False

    def _opened(self, store: str, opener: Callable[[], T]) -> T:
        # A failure is kept and raised again for a while, not retried on every call; then
        # one more try, since some causes pass (another process held the graph's lock, the
        # Ollama server was starting). The log gets a line only when the reason changes.
        known = self._broken.get(store)
        if known is not None and self._clock() - known[1] < RETRY_AFTER:
            raise known[0]
        try:
            engine = opener()
        except EngineUnavailableError as exc:
            failure = exc
        except Exception as exc:  # an engine's own error on open: same outcome, one message
            failure = EngineUnavailableError(f"{store} unavailable: {exc}", store=store)
        else:
            self._broken.pop(store, None)
            return engine
        self._broken[store] = (failure, self._clock())
        if self.debug is not None and (known is None or str(known[0]) != str(failure)):
            self.debug.write(
                "warning", "memory_engine_unavailable", store=store, error=str(failure)
            )
        raise failure

    def close(self) -> None:
        for engine in (self._index, self._graph):
            if engine is not None:
                engine.close()
        self._index = self._graph = None

    # -- write to all ---------------------------------------------------------------------------

    def remember(
        self,
        text: str,
        category: str = "note",
        payload: Mapping[str, Any] | None = None,
        provenance: Provenance | None = None,
    ) -> Written:
        """`write_memory`: the note; the wiki page when the category is `wiki/<slug>`; the
        index; the graph."""
        note, page = write_record(
            self.notes, lambda: self.wiki, text, category, payload, provenance
        )
        written = Written(note, page=page)
        if self.config.rag_auto_index_memory:
            self._index_atoms(written, [note])
        if written.page is not None and self.config.rag_auto_index_wiki:
            self._index_atoms(written, [self.indexable(written.page)])
        self._link(written, note, written.page)
        return written

    def write_page(
        self, slug: str, text: str, mode: WikiMode = "append", provenance: Provenance | None = None
    ) -> Written:
        """`wiki_write`: the page, then the index and the graph."""
        page = self.wiki.write(slug, text, mode, provenance)
        written = Written(page, page=page)
        if self.config.rag_auto_index_wiki:
            self._index_atoms(written, [self.indexable(page)])
        self._link(written, None, page)
        return written

    def _index_atoms(self, written: Written, atoms: list[Atom]) -> None:
        try:
            self.index().upsert(atoms)
            written.indexed = True
        except Exception as exc:  # the record is written; a failed extra is reported, not raised
            written.problems.append(f"not indexed: {exc}")

    def _link(self, written: Written, note: Atom | None, page: Atom | None) -> None:
        from runtime.memory.linking import link_note, link_page

        try:
            graph = self.graph()
            if note is not None:
                link_note(graph, note)
            if page is not None:
                link_page(graph, page)
            written.linked = True
        except Exception as exc:  # as above: the record stands
            written.problems.append(f"not linked in the graph: {exc}")


@dataclass(frozen=True)
class Synced:
    """What `sync_index` did: embedded new or changed atoms, dropped rows whose source is gone."""

    added: int
    updated: int
    removed: int
    unchanged: int

    def __str__(self) -> str:
        return (
            f"{self.added} added, {self.updated} updated, {self.removed} removed, "
            f"{self.unchanged} unchanged"
        )


def sync_index(memory: Memory, progress: Progress | None = None) -> Synced:
    """Bring the index up to date with the notes and wiki pages (only changes are embedded)."""
    index = memory.index()
    notes = memory.notes.atoms()
    atoms = [*notes, *(memory.indexable(page) for page in memory.wiki.atoms())]
    known = index.digests()
    changed = [atom for atom in atoms if known.get(atom.source) != atom.digest()]
    added = sum(1 for atom in changed if atom.source not in known)
    if changed:
        index.upsert(changed, progress)
    live = {atom.source for atom in atoms}
    gone = [source for source in known if source not in live]
    if gone:
        index.delete(gone)
    if memory.quarantine is not None:
        held = {note.source for note in notes if memory.quarantine.holds(note.provenance)}
        index.set_quarantined([n.source for n in notes if n.source not in held], False)
        index.set_quarantined(sorted(held), True)
    return Synced(added, len(changed) - added, len(gone), len(atoms) - len(changed))


def engine_openers(
    paths: InstancePaths | Path, config: InstanceConfig, *, read_only: bool = False
) -> tuple[IndexOpener, GraphOpener]:
    """The real engines for a memory root (an instance, or a team's shared memory).

    `read_only` engines write no byte: the index is not created when missing, the graph is
    opened without the right to write (and is unavailable when there is none yet)."""
    root = paths.root if isinstance(paths, InstancePaths) else paths
    name = paths.name if isinstance(paths, InstancePaths) else None

    def open_index() -> VectorIndex:
        from runtime.memory.embed import build_embedder
        from runtime.memory.lance import open_lance_index

        embedder = build_embedder(config)
        # Embed once now: an unreachable or broken embedder is reported when search is first
        # used, not as "no matches" from an index that could not take the note.
        embedder.embed(["mnemara"])
        return open_lance_index(root / "index", embedder, create=not read_only)

    def open_graph() -> GraphStore:
        from runtime.memory.engines import database_path
        from runtime.memory.graph import open_graph as open_engine

        path = database_path(root / "graph", config.graph_engine)
        if read_only and not path.exists():
            raise EngineUnavailableError(
                "no graph yet (nothing has been linked)", store="graph", path=path
            )
        return open_engine(root / "graph", config.graph_engine, instance=name, read_only=read_only)

    return open_index, open_graph


@contextmanager
def open_memory(
    paths: InstancePaths,
    config: InstanceConfig,
    debug: DebugLog | None = None,
    *,
    read_only: bool = False,
) -> Iterator[Memory]:
    """An instance's memory; engines opened inside the block are closed when it ends.

    `read_only` is for commands that only read: its engines write no byte (engine_openers);
    the notes and wiki are read as files, and a write through them is the caller's bug."""
    open_index, open_graph = engine_openers(paths, config, read_only=read_only)
    memory = Memory(
        notes=FileNotes(paths.memory),
        wiki=FileWiki(paths.wiki),
        config=config,
        open_index=open_index,
        open_graph=open_graph,
        debug=debug,
        pending=Pending(paths.memory),
        read_only=read_only,
    )
    try:
        yield memory
    finally:
        memory.close()


@contextmanager
def open_shared_memory(root: Path, debug: DebugLog | None = None) -> Iterator[Memory]:
    """A team's shared memory under `root` (`<home>/_teams/<team>/memory`): its wiki, graph
    and index, with the default engines, and the team's quarantine ledger."""
    config = InstanceConfig()
    open_index, open_graph = engine_openers(root, config)
    memory = Memory(
        notes=FileNotes(root / "memory"),
        wiki=FileWiki(root / "wiki"),
        config=config,
        open_index=open_index,
        open_graph=open_graph,
        debug=debug,
        quarantine=Quarantine(root / "quarantine.jsonl"),
        pending=Pending(root / "memory"),
    )
    try:
        yield memory
    finally:
        memory.close()
