"""Notes written without the engines, waiting to be indexed and linked (`memory/.unindexed`).

`mnemara note` appends a note in about the time Python takes to start: it never loads the
embedder, LanceDB or the graph. It names the note's source here instead, and whichever
process next opens the instance's index for writing (the running host at its next search, or
a command that indexes) embeds and links it, then takes its name off the list.

One source per line. Every change is made holding `.unindexed.lock` (a file that is never
replaced), so a note named while a catch-up is under way is kept for the next one; the list
itself is replaced atomically, and a torn last line from a crash names no source and is
dropped.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from runtime.errors import MemoryStoreError
from runtime.memory.files import append_bytes
from runtime.memory.model import Atom, Provenance
from runtime.memory.protocols import GraphStore, NoteStore, VectorIndex, WikiStore
from runtime.memory.slugs import check_slug

if TYPE_CHECKING:  # types only: `mnemara note` must not load the config's models
    from runtime.instance.config import InstanceConfig
    from runtime.instance.debuglog import DebugLog

LIST = ".unindexed"


class Pending:
    """The list of sources under one memory directory (an instance's `memory/`)."""

    def __init__(self, directory: Path) -> None:
        self.path = directory / LIST
        self._lock = directory / (LIST + ".lock")

    def add(self, sources: Sequence[str]) -> None:
        if not sources:
            return
        with self._locked():
            append_bytes(self.path, "".join(f"{source}\n" for source in sources).encode())

    def sources(self) -> list[str]:
        """The sources waiting, in the order they were named, each once."""
        try:
            if not self.path.stat().st_size:
                return []
            if not self.path.is_file():
                raise MemoryStoreError(f"{self.path}: not a regular file; move it out of the way")
            text = self.path.read_bytes().decode("utf-8", errors="replace")
        except FileNotFoundError:
            return []
        except OSError as exc:
            raise MemoryStoreError(f"{self.path}: cannot be read ({exc.strerror})") from None
        whole = text.split("\n")[:-1]  # a line without its newline was torn by a crash
        return list(dict.fromkeys(line for line in whole if line.strip()))

    def remove(self, sources: Sequence[str]) -> None:
        """Take `sources` off the list; names added meanwhile stay on it."""
        done = set(sources)
        if not done:
            return
        with self._locked():
            left = [source for source in self.sources() if source not in done]
            if left:
                temporary = self.path.with_name(f"{LIST}.{os.getpid()}.tmp")
                temporary.write_text("".join(f"{source}\n" for source in left), encoding="utf-8")
                os.replace(temporary, self.path)
            else:
                self.path.unlink(missing_ok=True)

    @contextmanager
    def _locked(self) -> Iterator[None]:
        self._lock.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self._lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)


def write_record(
    notes: NoteStore,
    wiki: Callable[[], WikiStore],
    text: str,
    category: str = "note",
    payload: Mapping[str, Any] | None = None,
    provenance: Provenance | None = None,
) -> tuple[Atom, Atom | None]:
    """The record of a `write_memory`: the note, and the wiki page when the category is
    `wiki/<slug>` (`wiki` is called only then). What the engines do with it comes after."""
    if not text.strip() and not payload:
        raise MemoryStoreError("nothing to write (empty text and no payload)")
    # A bad page name is refused before anything is written: no note without its page.
    slug = check_slug(category.removeprefix("wiki/")) if category.startswith("wiki/") else None
    note = notes.append(text, category, payload, provenance)
    page = wiki().write(slug, note.text, "append", provenance) if slug is not None else None
    return note, page


class Engines(Protocol):
    """What a catch-up needs of a Memory (memory.py imports this module, not the reverse)."""

    notes: NoteStore
    wiki: WikiStore
    config: InstanceConfig
    debug: DebugLog | None

    def index(self) -> VectorIndex: ...

    def graph(self) -> GraphStore: ...

    def indexable(self, atom: Atom) -> Atom: ...


def catch_up(memory: Engines, pending: Pending) -> None:
    """Index and link the notes and pages `pending` names, then take them off the list.

    A failure leaves them on it for the next try and is logged, never raised: the notes are
    written, and the caller asked for an engine, not for this."""
    waiting = pending.sources()
    if not waiting:
        return
    wanted = set(waiting)
    notes = [atom for atom in memory.notes.atoms() if atom.source in wanted]
    pages = [memory.indexable(atom) for atom in memory.wiki.atoms() if atom.source in wanted]
    try:
        if memory.config.rag_enabled and (notes or pages):
            memory.index().upsert([*notes, *pages])
        if memory.config.graph_enabled and (notes or pages):
            from runtime.memory.linking import link_note, link_page

            graph = memory.graph()
            for note in notes:
                link_note(graph, note)
            for page in pages:
                link_page(graph, page)
    except Exception as exc:  # kept on the list
        if memory.debug is not None:
            memory.debug.write("warning", "memory_catch_up_failed", error=str(exc))
        return
    pending.remove(waiting)  # archived or gone meanwhile: nothing left to do for those
