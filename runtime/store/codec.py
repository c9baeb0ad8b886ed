"""How rows, slots and markers become SQLite values and back, losslessly.

Blocks are stored as compact JSON text with their keys in the order the model service sent
them. Text with lone surrogates (tool output decoded with `surrogateescape`) cannot be encoded
as UTF-8, so such a value falls back to ASCII escapes, which `json.loads` reverses exactly.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, cast

from runtime.rows import Block, Marker, NewRow, Role, Row, RowStatus, Slot

ROW_COLUMNS = (
    "id, ts, role, blocks, tokens, tokens_exact, pinned, label, status, consumed_ids, compressed"
)
SLOT_COLUMNS = "label, role, content, position, updated_at"
MARKER_COLUMNS = "name, after_row_id, ts"


def utc_now() -> str:
    """The store's timestamp format: ISO 8601, UTC, milliseconds."""
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def dump_json(value: Any) -> str:
    """Compact JSON that keeps key order and every character; always encodable as UTF-8."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = json.dumps(value, ensure_ascii=True, separators=(",", ":"))
    return text


def encode_blocks(blocks: Sequence[Block]) -> str:
    return dump_json(list(blocks))


def decode_blocks(text: str) -> tuple[Block, ...]:
    value = json.loads(text)
    if not isinstance(value, list) or not all(isinstance(b, dict) for b in value):
        raise ValueError("blocks must be a JSON list of objects")
    return tuple(cast(list[Block], value))


def encode_ids(ids: Sequence[int]) -> str:
    return dump_json([int(i) for i in ids])


def decode_ids(text: str) -> tuple[int, ...]:
    return tuple(int(i) for i in json.loads(text))


def new_row_values(row: NewRow, ts: str, status: RowStatus) -> tuple[Any, ...]:
    """Values for an INSERT of everything but `id`, in ROW_COLUMNS order."""
    return (
        ts,
        row.role,
        encode_blocks(row.blocks),
        int(row.tokens),
        int(row.tokens_exact),
        int(row.pinned),
        row.label,
        status,
        encode_ids(row.consumed_ids),
        0,
    )


def row_values(row: Row) -> tuple[Any, ...]:
    """Values for an INSERT of a whole row (import), in ROW_COLUMNS order."""
    return (
        row.id,
        row.ts,
        row.role,
        encode_blocks(row.blocks),
        int(row.tokens),
        int(row.tokens_exact),
        int(row.pinned),
        row.label,
        row.status,
        encode_ids(row.consumed_ids),
        int(row.compressed),
    )


def decode_row(values: sqlite3.Row | tuple[Any, ...]) -> Row:
    """A Row from one SELECT of ROW_COLUMNS."""
    (row_id, ts, role, blocks, tokens, exact, pinned, label, status, consumed, compressed) = values
    return Row(
        id=int(row_id),
        ts=str(ts),
        role=cast(Role, role),
        blocks=decode_blocks(blocks),
        tokens=int(tokens),
        tokens_exact=bool(exact),
        pinned=bool(pinned),
        label=str(label),
        status=cast(RowStatus, status),
        consumed_ids=decode_ids(consumed),
        compressed=bool(compressed),
    )


def decode_slot(values: tuple[Any, ...]) -> Slot:
    label, role, content, position, updated_at = values
    return Slot(
        label=str(label),
        role=str(role),
        content=str(content),
        position=int(position),
        updated_at=str(updated_at),
    )


def decode_marker(values: tuple[Any, ...]) -> Marker:
    name, after_row_id, ts = values
    return Marker(name=str(name), after_row_id=int(after_row_id), ts=str(ts))
