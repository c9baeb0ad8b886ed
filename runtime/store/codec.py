"""How rows, slots, markers and outbox entries become SQLite values and back, losslessly.

Blocks are stored as compact JSON text with their keys in the order the model service sent
them. Text with lone surrogates (tool output decoded with `surrogateescape`) cannot be encoded
as UTF-8, so such a value falls back to ASCII escapes, which `json.loads` reverses exactly.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, cast

from runtime.window.rows import (
    Block,
    Marker,
    NewRow,
    OutboxEntry,
    Role,
    Row,
    RowStatus,
    Slot,
    send_label,
)
from sqlitekit.jsonload import STORED_DEPTH, load_json

ROW_COLUMNS = (
    "id, ts, role, blocks, tokens, tokens_exact, pinned, label, status, consumed_ids, compressed"
)
SLOT_COLUMNS = "label, role, content, position, updated_at"
MARKER_COLUMNS = "name, after_row_id, ts"
OUTBOX_COLUMNS = (
    "id, key, user_row_id, position, recipient, topic, payload, created_at, published_at,"
    " message_id, failed, failed_at, source"
)


def utc_now() -> str:
    """The store's timestamp format: ISO 8601, UTC, milliseconds."""
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def seconds_before(ts: str, seconds: float) -> str:
    """The store timestamp `seconds` before `ts` (an ISO 8601 time from the store's clock).

    Same format as utc_now, so it compares with stored timestamps as plain strings."""
    moment = datetime.fromisoformat(ts).astimezone(UTC) - timedelta(seconds=seconds)
    return moment.isoformat(timespec="milliseconds")


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
    value = load_json(text, max_depth=STORED_DEPTH)
    if not isinstance(value, list) or not all(isinstance(b, dict) for b in value):
        raise ValueError("blocks must be a JSON list of objects")
    return tuple(cast(list[Block], value))


def encode_ids(ids: Sequence[int]) -> str:
    return dump_json([int(i) for i in ids])


def decode_ids(text: str) -> tuple[int, ...]:
    return tuple(int(i) for i in load_json(text))


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


def decode_outbox_entry(values: tuple[Any, ...]) -> OutboxEntry:
    """An OutboxEntry from one SELECT of OUTBOX_COLUMNS."""
    (entry_id, key, user_row_id, position, recipient, topic, payload, created_at) = values[:8]
    published_at, message_id, failed, failed_at, source = values[8:]
    return OutboxEntry(
        id=int(entry_id),
        key=str(key),
        label=send_label(int(user_row_id), int(position)),
        user_row_id=int(user_row_id),
        position=int(position),
        recipient=None if recipient is None else str(recipient),
        topic=None if topic is None else str(topic),
        payload=cast(dict[str, Any], load_json(payload, max_depth=STORED_DEPTH)),
        created_at=str(created_at),
        published_at=None if published_at is None else str(published_at),
        message_id=None if message_id is None else int(message_id),
        failed=None if failed is None else str(failed),
        failed_at=None if failed_at is None else str(failed_at),
        source=str(source),
    )
