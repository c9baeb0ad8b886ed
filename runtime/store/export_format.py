"""The JSONL export format (`mnemara.turns`, version 1): snapshot to lines, and lines back.

Line 1 is the header: `format`, `version`, `instance`, `exported_at`, `last_row_id` (the id
sequence, so ids deleted before the export are not reused after an import) and `counts` of each
line kind that follows. Then one JSON object per line, each with a `kind`: `row` (every Row
field, blocks verbatim), `slot`, `marker`, `meta`. Reading checks everything before a store is
touched: a newer version, a malformed line, a duplicate key, or fewer lines than the header
promises raise ExportFormatError naming the file and line.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from runtime.errors import ExportFormatError
from runtime.store.codec import dump_json
from runtime.store.snapshot import StoreSnapshot
from runtime.window.rows import Block, Marker, Role, Row, RowStatus, Slot
from sqlitekit.jsonload import STORED_DEPTH, load_json

FORMAT = "mnemara.turns"
VERSION = 1


class _Line(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class Header(_Line):
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
# The field that must be unique among the lines of each kind.
_KEYS = {"row": "id", "slot": "label", "marker": "name", "meta": "key"}


def encode_export(snapshot: StoreSnapshot, *, instance: str, exported_at: str) -> list[str]:
    """The lines of an export file (each ending in a newline), header first."""
    counts = {
        "row": len(snapshot.rows),
        "slot": len(snapshot.slots),
        "marker": len(snapshot.markers),
        "meta": len(snapshot.meta),
    }
    header = {"kind": "header", "format": FORMAT, "version": VERSION, "instance": instance}
    header |= {"exported_at": exported_at, "last_row_id": snapshot.last_row_id, "counts": counts}
    # asdict keeps the dataclass field order; a field added to Row later shows up here and is
    # rejected by _RowLine on import until the format learns it, so the round trip stays exact.
    lines: list[dict[str, Any]] = [header]
    lines += [{"kind": "row", **asdict(row)} for row in snapshot.rows]
    lines += [{"kind": "slot", **asdict(slot)} for slot in snapshot.slots]
    lines += [{"kind": "marker", **asdict(marker)} for marker in snapshot.markers]
    lines += [{"kind": "meta", "key": key, "value": value} for key, value in snapshot.meta.items()]
    return [dump_json(line) + "\n" for line in lines]


def read_export(path: Path) -> tuple[Header, StoreSnapshot]:
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
    first_seen: dict[tuple[str, Any], int] = {}
    for number, text in numbered[1:]:
        data = _load(path, number, text)
        kind = str(data.get("kind"))
        if kind not in _KINDS:
            raise _error(path, number, f"unknown line kind {data.get('kind')!r}")
        line = _validate(path, number, _KINDS[kind], data)
        key = (kind, getattr(line, _KEYS[kind]))
        if key in first_seen:
            raise _error(
                path,
                number,
                f"a second {kind} with {_KEYS[kind]} {key[1]!r} (first on line {first_seen[key]})",
            )
        first_seen[key] = number
        parsed[kind].append(line)
    found = Counter({kind: len(items) for kind, items in parsed.items()})
    for kind in _KINDS:
        if header.counts.get(kind, 0) != found[kind]:
            raise _error(
                path,
                numbered[-1][0],
                f"header promises {header.counts.get(kind, 0)} {kind} lines, file has "
                f"{found[kind]} (truncated or edited?)",
            )
    snapshot = StoreSnapshot(
        rows=tuple(_to_row(line) for line in parsed["row"]),
        slots=tuple(Slot(**line.model_dump(exclude={"kind"})) for line in parsed["slot"]),
        markers=tuple(Marker(**line.model_dump(exclude={"kind"})) for line in parsed["marker"]),
        meta={line.key: line.value for line in parsed["meta"]},
        last_row_id=header.last_row_id,
    )
    return header, snapshot


def _parse_header(path: Path, number: int, text: str) -> Header:
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
    header = _validate(path, number, Header, data)
    assert isinstance(header, Header)
    return header


def _load(path: Path, number: int, text: str) -> dict[str, Any]:
    try:
        data = load_json(text, max_depth=STORED_DEPTH)
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
