"""Notes written without the engines (`mnemara note`) wait in `memory/.unindexed` and are
indexed and linked, once, by the next process that opens an engine for writing."""

from __future__ import annotations

from pathlib import Path

import pytest

from runtime.errors import EngineUnavailableError, MemoryStoreError, WikiSlugError
from runtime.instance.config import InstanceConfig
from runtime.memory.fake import FakeGraph, FakeIndex
from runtime.memory.memory import Memory
from runtime.memory.notes import FileNotes
from runtime.memory.pending import Pending, write_record
from runtime.memory.wiki import FileWiki


class Counting(FakeIndex):
    def __init__(self) -> None:
        super().__init__()
        self.upserted: list[list[str]] = []
        self.broken = False

    def upsert(self, atoms, progress=None):  # type: ignore[no-untyped-def]
        if self.broken:
            raise EngineUnavailableError("the index is down", store="index")
        self.upserted.append([atom.source for atom in atoms])
        return super().upsert(atoms, progress)


def memory_at(root: Path, *, read_only: bool = False, **config: bool) -> tuple[Memory, Counting]:
    index, graph = Counting(), FakeGraph()
    memory = Memory(
        notes=FileNotes(root / "memory"),
        wiki=FileWiki(root / "wiki"),
        config=InstanceConfig(**config),
        open_index=lambda: index,
        open_graph=lambda: graph,
        pending=Pending(root / "memory"),
        read_only=read_only,
    )
    return memory, index


def noted(root: Path, text: str, category: str = "note") -> list[str]:
    """What `mnemara note` does: the record, then its sources named as waiting."""
    note, page = write_record(
        FileNotes(root / "memory"), lambda: FileWiki(root / "wiki"), text, category
    )
    sources = [note.source, *([page.source] if page else [])]
    Pending(root / "memory").add(sources)
    return sources


def test_the_list_keeps_order_once_each_and_drops_a_torn_line(tmp_path: Path) -> None:
    pending = Pending(tmp_path)
    assert pending.sources() == []
    pending.add(["memory/a.md#1", "memory/a.md#2"])
    pending.add(["memory/a.md#1"])
    with pending.path.open("a") as fh:
        fh.write("memory/a.md#3")  # a crash between the write and its newline
    assert pending.sources() == ["memory/a.md#1", "memory/a.md#2"]
    pending.remove(["memory/a.md#1"])
    assert pending.sources() == ["memory/a.md#2"]
    pending.remove(["memory/a.md#2"])
    assert not pending.path.exists() and pending.sources() == []
    pending.remove([])  # nothing to do, nothing made
    assert not pending.path.exists()


def test_a_name_added_during_a_catch_up_stays_for_the_next(tmp_path: Path) -> None:
    pending = Pending(tmp_path)
    pending.add(["memory/a.md#1"])
    seen = pending.sources()
    pending.add(["memory/a.md#2"])  # `mnemara note` while the first is being indexed
    pending.remove(seen)
    assert pending.sources() == ["memory/a.md#2"]


def test_the_next_writer_indexes_and_links_waiting_notes_once(tmp_path: Path) -> None:
    first = noted(tmp_path, "the loader is slow on cold caches")
    page = noted(tmp_path, "restart with make restart", "wiki/runbook")
    assert page[1] == "wiki/runbook"
    reader, reader_index = memory_at(tmp_path, read_only=True)
    assert reader.search("loader") == []  # a reader never writes: nothing indexed
    assert reader_index.upserted == [] and len(Pending(tmp_path / "memory").sources()) == 3

    memory, index = memory_at(tmp_path)
    [hit] = memory.search("loader slow", k=1)
    assert hit.source == first[0]
    assert sorted(index.upserted[0]) == sorted([*first, *page])
    graph = memory.graph()
    assert graph.match("memory_entry", {"source_path": first[0]})
    assert graph.match("wiki_page", {"ref": "runbook"})
    assert Pending(tmp_path / "memory").sources() == []
    memory.search("loader")
    assert len(index.upserted) == 1  # taken off the list: not embedded again


def test_a_failed_catch_up_keeps_the_notes_waiting(tmp_path: Path) -> None:
    sources = noted(tmp_path, "the cache is 4 GiB")
    memory, index = memory_at(tmp_path)
    index.broken = True
    memory.index()  # the caller gets its engine; the catch-up failed quietly
    assert Pending(tmp_path / "memory").sources() == sources
    index.broken = False
    memory.index()
    assert index.upserted == [sources] and Pending(tmp_path / "memory").sources() == []


def test_engines_switched_off_take_nothing_and_clear_the_list(tmp_path: Path) -> None:
    noted(tmp_path, "a note")
    memory, index = memory_at(tmp_path, rag_enabled=False)
    memory.graph()
    assert index.upserted == [] and Pending(tmp_path / "memory").sources() == []


def test_an_archived_note_waiting_is_dropped_from_the_list(tmp_path: Path) -> None:
    [source] = noted(tmp_path, "a note set aside before it was indexed")
    FileNotes(tmp_path / "memory").archive([source], "by hand")
    memory, index = memory_at(tmp_path)
    memory.index()
    assert index.upserted == [] and Pending(tmp_path / "memory").sources() == []


def test_the_record_refuses_before_writing(tmp_path: Path) -> None:
    notes, wiki = FileNotes(tmp_path / "memory"), lambda: FileWiki(tmp_path / "wiki")
    with pytest.raises(MemoryStoreError, match="nothing to write"):
        write_record(notes, wiki, "  ")
    with pytest.raises(WikiSlugError):
        write_record(notes, wiki, "text", "wiki/../escape")
    assert notes.atoms() == [] and not (tmp_path / "wiki").exists()


def test_a_list_that_is_not_a_file_is_named_with_what_to_do(tmp_path: Path) -> None:
    pending = Pending(tmp_path)
    pending.path.mkdir()
    with pytest.raises(MemoryStoreError, match=r"\.unindexed: not a regular file; move it out"):
        pending.sources()
    with pytest.raises(MemoryStoreError, match="not a regular file"):
        pending.add(["memory/a.md#1"])
