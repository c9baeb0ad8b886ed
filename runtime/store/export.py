"""Export and import of a whole turn store: JSONL that round-trips exactly, Markdown to read.

The format is described in export_format.py. Import parses and checks the whole file first,
then restores it in one transaction; a store that already has rows, slots or markers is refused
unless `replace=True`, which swaps its whole content (see TurnStore.restore). `export_markdown`
(markdown.py) is the readable form and is not meant to be imported. Delivery state (consumed
message ids, the outbox) is not exported and an import leaves it alone (see snapshot.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from runtime.store.codec import utc_now
from runtime.store.export_format import FORMAT, VERSION, encode_export, read_export
from runtime.store.markdown import export_markdown
from runtime.store.turn_store import TurnStore

__all__ = ["FORMAT", "VERSION", "ImportSummary", "export_jsonl", "export_markdown", "import_jsonl"]


@dataclass(frozen=True)
class ImportSummary:
    """What `import_jsonl` loaded; `str()` is the line the CLI prints."""

    path: Path
    version: int
    instance: str
    rows: int
    slots: int
    markers: int
    meta: int
    replaced: bool

    def __str__(self) -> str:
        how = "replacing the window" if self.replaced else "into an empty window"
        return (
            f"{self.rows} rows, {self.slots} slots, {self.markers} markers and {self.meta} meta "
            f"entries from {self.path} (instance {self.instance!r}, format v{self.version}), {how}"
        )


def export_jsonl(store: TurnStore, out: TextIO, *, instance: str) -> int:
    """Write the whole store to `out`; returns the number of rows written."""
    snapshot = store.snapshot()
    out.writelines(encode_export(snapshot, instance=instance, exported_at=utc_now()))
    return len(snapshot.rows)


def import_jsonl(store: TurnStore, path: Path, *, replace: bool = False) -> ImportSummary:
    """Load an export into `store` in one transaction; see the module docstring for refusals."""
    header, snapshot = read_export(path)
    store.restore(snapshot, replace=replace)
    return ImportSummary(
        path=path,
        version=header.version,
        instance=header.instance,
        rows=len(snapshot.rows),
        slots=len(snapshot.slots),
        markers=len(snapshot.markers),
        meta=len(snapshot.meta),
        replaced=replace,
    )
