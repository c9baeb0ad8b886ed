"""The export file: versioned JSONL that round-trips a whole turn store exactly.

Line 1 is a header, `{"kind": "header", "format": "mnemara.turns", "version": 1, ...}` with
the instance name, export time, the id sequence and how many lines of each kind follow. Then
one JSON object per line: `row` (every Row field, blocks verbatim), `slot`, `marker`, `meta`.
A file from a newer format version, a malformed line, or a file shorter than its header says
raises ExportFormatError naming the file and line. Import is one transaction, and refuses a
store that already has rows, slots or markers unless `replace=True` (see TurnStore.restore).
`export_markdown` (markdown.py) is the readable form; it is not meant to be imported.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TextIO

from pydantic import BaseModel, ConfigDict, ValidationError

from runtime.errors import ExportFormatError
from runtime.rows import Block, Marker, Role, Row, RowStatus, Slot
from runtime.store.codec import dump_json, utc_now
from runtime.store.markdown import export_markdown
from runtime.store.snapshot import StoreSnapshot
from runtime.store.turn_store import TurnStore

FORMAT = "mnemara.turns"
VERSION = 1

__all__ = ["FORMAT", "VERSION", "ImportSummary", "export_jsonl", "export_markdown", "import_jsonl"]


@dataclass(frozen=True)
class ImportSummary:
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


class _Line(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class _Header(_Line):
    kind: Literal["header"]
    format: Literal["mnemara.turns"]
    version: int
    instance: str
    exported_at: str
    last_row_id: int
    counts: dict[str, int]


class _RowLine(_Line):
    kind: Literal["row"]
    id: int
    ts: str
    role: Role
    status: RowStatus
    tokens: int
    tokens_exact: bool
    pinned: bool
    label: str
    compressed: bool
    consumed_ids: list[int]
    blocks: list[Block]


class _SlotLine(_Line):
    kind: Literal["slot"]
    label: str
    role: str
    content: str
    position: int
    updated_at: str


class _MarkerLine(_Line):
    kind: Literal["marker"]
    name: str
    after_row_id: int
    ts: str


class _MetaLine(_Line):
    kind: Literal["meta"]
    key: str
    value: str


_KINDS: dict[str, type[_Line]] = {
    "row": _RowLine,
    "slot": _SlotLine,
    "marker": _MarkerLine,
    "meta": _MetaLine,
}


def export_jsonl(store: TurnStore, out: TextIO, *, instance: str) -> int:
    """Write the whole store to `out`; returns the number of rows written."""
    snap = store.snapshot()
    header = {
        "kind": "header",
        "format": FORMAT,
        "version": VERSION,
        "instance": instance,
        "exported_at": utc_now(),
        "last_row_id": snap.last_row_id,
        "counts": {
            "row": len(snap.rows),
            "slot": len(snap.slots),
            "marker": len(snap.markers),
            "meta": len(snap.meta),
        },
    }
    lines: list[dict[str, Any]] = [header]
    lines += [{"kind": "row", **_row_fields(row)} for row in snap.rows]
    lines += [{"kind": "slot", **_slot_fields(slot)} for slot in snap.slots]
    lines += [{"kind": "marker", **_marker_fields(marker)} for marker in snap.markers]
    lines += [{"kind": "meta", "key": key, "value": value} for key, value in snap.meta.items()]
    for line in lines:
        out.write(dump_json(line) + "\n")
    return len(snap.rows)


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


def read_export(path: Path) -> tuple[_Header, StoreSnapshot]:
    """Parse and check a whole export file without touching any store."""
    try:
        with path.open(encoding="utf-8") as source:
            numbered = [(n, text) for n, text in enumerate(source, start=1) if text.strip()]
    except (OSError, UnicodeDecodeError) as exc:
        raise ExportFormatError(f"{path}: cannot read ({exc})", path=path) from exc
    if not numbered:
        raise ExportFormatError(f"{path}: empty file, not a mnemara export", path=path, line=1)
    header = _parse_header(path, *numbered[0])
    parsed: dict[str, list[Any]] = {kind: [] for kind in _KINDS}
    for number, text in numbered[1:]:
        data = _load(path, number, text)
        model = _KINDS.get(str(data.get("kind")))
        if model is None:
            raise _error(path, number, f"unknown line kind {data.get('kind')!r}")
        parsed[str(data["kind"])].append(_validate(path, number, model, data))
    found = Counter({kind: len(items) for kind, items in parsed.items()})
    for kind in _KINDS:
        if header.counts.get(kind, 0) != found[kind]:
            raise _error(
                path,
                numbered[-1][0],
                f"header promises {header.counts.get(kind, 0)} {kind} lines, file has "
                f"{found[kind]} (truncated or edited?)",
            )
    rows = tuple(_to_row(line) for line in parsed["row"])
    if len({row.id for row in rows}) != len(rows):
        raise _error(path, None, "two rows share an id")
    snapshot = StoreSnapshot(
        rows=rows,
        slots=tuple(Slot(**line.model_dump(exclude={"kind"})) for line in parsed["slot"]),
        markers=tuple(Marker(**line.model_dump(exclude={"kind"})) for line in parsed["marker"]),
        meta={line.key: line.value for line in parsed["meta"]},
        last_row_id=header.last_row_id,
    )
    return header, snapshot


def _parse_header(path: Path, number: int, text: str) -> _Header:
    data = _load(path, number, text)
    if data.get("kind") != "header" or data.get("format") != FORMAT:
        raise _error(path, number, f"not a mnemara export (first line is not a {FORMAT} header)")
    version = data.get("version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise _error(path, number, f"header has no valid version ({version!r})")
    if version > VERSION:
        raise _error(
            path,
            number,
            f"written by a newer mnemara (format version {version}; this one reads up to "
            f"{VERSION}). Upgrade mnemara to import it.",
        )
    header = _validate(path, number, _Header, data)
    assert isinstance(header, _Header)
    return header


def _load(path: Path, number: int, text: str) -> dict[str, Any]:
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise _error(path, number, f"not valid JSON ({exc})") from exc
    if not isinstance(data, dict):
        raise _error(path, number, "expected a JSON object")
    return data


def _validate(path: Path, number: int, model: type[_Line], data: dict[str, Any]) -> _Line:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'line'}: {e['msg']}" for e in exc.errors()
        )
        raise _error(path, number, problems) from None


def _error(path: Path, line: int | None, message: str) -> ExportFormatError:
    where = f"{path}:{line}" if line is not None else str(path)
    return ExportFormatError(f"{where}: {message}; nothing was imported", path=path, line=line)


def _to_row(line: _RowLine) -> Row:
    return Row(
        id=line.id,
        ts=line.ts,
        role=line.role,
        blocks=tuple(line.blocks),
        tokens=line.tokens,
        tokens_exact=line.tokens_exact,
        pinned=line.pinned,
        label=line.label,
        status=line.status,
        consumed_ids=tuple(line.consumed_ids),
        compressed=line.compressed,
    )


def _row_fields(row: Row) -> dict[str, Any]:
    return {
        "id": row.id,
        "ts": row.ts,
        "role": row.role,
        "status": row.status,
        "tokens": row.tokens,
        "tokens_exact": row.tokens_exact,
        "pinned": row.pinned,
        "label": row.label,
        "compressed": row.compressed,
        "consumed_ids": list(row.consumed_ids),
        "blocks": list(row.blocks),
    }


def _slot_fields(slot: Slot) -> dict[str, Any]:
    return {
        "label": slot.label,
        "role": slot.role,
        "content": slot.content,
        "position": slot.position,
        "updated_at": slot.updated_at,
    }


def _marker_fields(marker: Marker) -> dict[str, Any]:
    return {"name": marker.name, "after_row_id": marker.after_row_id, "ts": marker.ts}
