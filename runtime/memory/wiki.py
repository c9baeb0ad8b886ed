"""Wiki pages on disk: `wiki/<slug>.md`, plain Markdown, written by append or explicit replace.

Appending adds the text after a blank line (the page is created when missing); replacing
writes a temp file and renames it, so a reader sees the old page or the new one. A writer
known to the host leaves a provenance comment above what it wrote.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from runtime.errors import MemoryStoreError
from runtime.instance.config import write_text_atomic
from runtime.memory.files import append_bytes, read_memory_text
from runtime.memory.model import Atom, Provenance
from runtime.memory.notes import neutralise
from runtime.memory.protocols import WikiMode
from runtime.memory.slugs import check_slug, page_path

MAX_PAGE_BYTES = 1_000_000


def page_atom(slug: str, text: str, written_at: str = "") -> Atom:
    return Atom(
        source=f"wiki/{slug}", kind="wiki", text=text, category="wiki", written_at=written_at
    )


def section(text: str, provenance: Provenance | None) -> str:
    mark = f"<!-- {provenance.render()} -->\n" if provenance is not None else ""
    return mark + neutralise(text.strip()) + "\n"


class FileWiki:
    """The WikiStore of an instance (or of a team's shared memory): pages under `root`."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def read(self, slug: str) -> str | None:
        path = page_path(self.root, check_slug(slug))
        if path.is_dir():
            return None
        try:
            return read_memory_text(path)
        except FileNotFoundError:
            return None

    def write(
        self, slug: str, text: str, mode: WikiMode = "append", provenance: Provenance | None = None
    ) -> Atom:
        slug = check_slug(slug)
        if not text.strip():
            raise MemoryStoreError(f"wiki page {slug!r}: nothing to write (empty text)")
        path = page_path(self.root, slug)
        path.parent.mkdir(parents=True, exist_ok=True)
        page_path(self.root, slug)  # again: a parent made a symlink meanwhile is refused
        addition = section(text, provenance)
        if mode == "replace":
            self._check_size(slug, len(addition.encode()))
            write_text_atomic(path, addition)
        elif mode == "append":
            size = path.stat().st_size if path.is_file() else 0
            self._check_size(slug, size + len(addition.encode()) + 1)
            append_bytes(path, (("\n" if size else "") + addition).encode("utf-8"))
        else:
            raise MemoryStoreError(f"wiki page {slug!r}: mode must be 'append' or 'replace'")
        now = datetime.now(UTC).isoformat(timespec="seconds")
        return page_atom(slug, read_memory_text(path), now)

    def pages(self, prefix: str = "") -> list[str]:
        wanted = prefix.strip().lstrip("/").lower()
        slugs = []
        if not self.root.is_dir():
            return []
        for path in self.root.rglob("*.md"):
            if path.is_symlink() or not path.is_file():
                continue
            name = path.relative_to(self.root).with_suffix("").as_posix()
            try:
                slug = check_slug(name)
            except MemoryStoreError:
                continue  # a file the wiki did not write (bad name): not a page
            if slug == name and slug.startswith(wanted):
                slugs.append(slug)
        return sorted(slugs)

    def atoms(self) -> list[Atom]:
        atoms = []
        for slug in self.pages():
            path = page_path(self.root, slug)
            stamp = datetime.fromtimestamp(path.stat().st_mtime, UTC).isoformat(timespec="seconds")
            atoms.append(page_atom(slug, read_memory_text(path), stamp))
        return atoms

    def _check_size(self, slug: str, size: int) -> None:
        if size > MAX_PAGE_BYTES:
            raise MemoryStoreError(
                f"wiki page {slug!r} would pass {MAX_PAGE_BYTES:,} bytes; "
                "split it into pages under the same prefix"
            )
