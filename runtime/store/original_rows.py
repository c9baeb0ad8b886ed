"""The original mnemara's turn table: finding it in a `turns.sqlite` and mapping its rows to ours.

The original kept one table with the columns id, ts, role, content, tool_uses, tokens_in,
tokens_out, pin_label and compressed_read_stub. Its shapes were loose, so the mapping is
tolerant: `content` may be plain text, a JSON list of blocks or one JSON block; `tool_uses` a
JSON list of blocks or of `{name, input}` objects. Nothing is dropped: text that does not parse
is kept as a text block, and the original file is backed up before conversion (schema.py).

The original's segment markers were rows too (role `marker`, the name as JSON text in
`content`), which its prompt builder skipped. They become our markers, never rows the model
would see: each is placed after the last row before it. A name marked twice meant its latest
mark (the original's `evict_since` looked it up by name, newest first), and marking a name
again moves our marker, so the earlier marks are superseded; every such case is a note.
"""

from __future__ import annotations

import re
import sqlite3
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from runtime.store.codec import dump_json
from runtime.window.rows import Block, Marker, Role, Row, estimate_tokens
from sqlitekit.jsonload import STORED_DEPTH, load_json

LEGACY_COLUMNS = frozenset({"id", "role", "content", "pin_label"})
_ROLES: frozenset[str] = frozenset({"user", "assistant", "system"})
_UNPARSED = object()
_EPOCH = re.compile(r"\d{9,11}(\.\d+)?")
MARKER_ROLE = "marker"  # the original's role for a segment marker row


@dataclass(frozen=True)
class LegacyRows:
    """The converted rows and markers of the original's table, and what had to be guessed."""

    table: str
    rows: tuple[Row, ...]
    notes: tuple[str, ...]
    markers: tuple[Marker, ...] = ()


def find_legacy_table(conn: sqlite3.Connection) -> str | None:
    """The name of the original's turn table, if this file has one."""
    tables = conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
        " ORDER BY name = 'turns' DESC, name"
    ).fetchall()
    for (name,) in tables:
        columns = {str(info[1]) for info in conn.execute(f"PRAGMA table_info({quote_name(name)})")}
        if columns >= LEGACY_COLUMNS:
            return str(name)
    return None


def quote_name(name: str) -> str:
    """An SQL identifier for any table name read from sqlite_master."""
    return '"' + name.replace('"', '""') + '"'


def read_legacy_rows(conn: sqlite3.Connection, table: str) -> LegacyRows:
    """Every row of the original table, converted, in its original order."""
    columns = {str(info[1]) for info in conn.execute(f"PRAGMA table_info({quote_name(table)})")}
    cursor = conn.execute(f"SELECT * FROM {quote_name(table)} ORDER BY rowid")
    names = [d[0] for d in cursor.description]
    records = [dict(zip(names, values, strict=True)) for values in cursor]
    notes: list[str] = []
    missing = {"ts", "tool_uses", "tokens_in", "tokens_out", "compressed_read_stub"} - columns
    if missing:
        notes.append(f"original table has no {', '.join(sorted(missing))} column(s)")
    ids = [record.get("id") for record in records]
    keep_ids = all(isinstance(i, int) and i > 0 for i in ids) and len(set(ids)) == len(ids)
    if not keep_ids:
        notes.append("original ids were not unique positive integers; rows renumbered in order")
    rows: list[Row] = []
    markers: dict[str, tuple[int, Marker]] = {}
    for index, record in enumerate(records, start=1):
        row_id = int(record["id"]) if keep_ids else index
        if record.get("role") == MARKER_ROLE:
            marker, note = convert_marker(record, after_row_id=rows[-1].id if rows else 0)
            earlier = markers.get(marker.name)
            if earlier is not None:
                notes.append(
                    f"marker {marker.name!r} (original row {earlier[0]}) superseded by its "
                    f"later mark (original row {row_id}), as the original's evict_since chose"
                )
            markers[marker.name] = (row_id, marker)
            if note:
                notes.append(f"marker {marker.name!r} (original row {row_id}): {note}")
            continue
        row, note = convert_row(row_id, record)
        rows.append(row)
        if note:
            notes.append(f"row {row_id}: {note}")
    kept = tuple(marker for _, marker in markers.values())
    return LegacyRows(table=table, rows=tuple(rows), notes=tuple(notes), markers=kept)


def convert_marker(record: dict[str, Any], *, after_row_id: int) -> tuple[Marker, str]:
    """One original marker row as our marker after `after_row_id`, plus a note when its
    content was not the JSON name `mark_segment` wrote or it carried a pin."""
    content = record.get("content")
    raw = content.decode("utf-8", "replace") if isinstance(content, bytes) else str(content or "")
    parsed = _parse_json(raw)
    notes = []
    if isinstance(parsed, str) and parsed:
        name = parsed
    else:
        name = raw
        notes.append(f"content {raw[:80]!r} is not a JSON name; kept as the name")
    if record.get("pin_label") is not None:
        notes.append(f"its pin {record['pin_label']!r} dropped: markers are not pinned")
    marker = Marker(name=name, after_row_id=after_row_id, ts=_timestamp(record.get("ts")))
    return marker, "; ".join(notes)


def convert_row(row_id: int, record: dict[str, Any]) -> tuple[Row, str]:
    """One original row as ours, plus a note when something had to be guessed."""
    notes = []
    role_text = str(record.get("role") or "user")
    role: Role = "user"
    if role_text in _ROLES:
        role = role_text  # type: ignore[assignment]
    else:
        notes.append(f"role {role_text!r} stored as 'user'")
    blocks = content_blocks(record.get("content"))
    seen = {b.get("id") for b in blocks if b.get("type") == "tool_use" and b.get("id")}
    for block in tool_use_blocks(record.get("tool_uses"), row_id):
        if block.get("type") == "tool_use" and block.get("id") in seen:
            continue  # already present in a JSON `content`
        blocks.append(block)
    pin = record.get("pin_label")
    tokens, exact = _tokens(role, record, blocks)
    row = Row(
        id=row_id,
        ts=_timestamp(record.get("ts")),
        role=role,
        blocks=tuple(blocks),
        tokens=tokens,
        tokens_exact=exact,
        pinned=pin is not None,
        label=str(pin) if pin is not None else "",
        status="complete",
        consumed_ids=(),
        compressed=bool(record.get("compressed_read_stub")),
    )
    return row, "; ".join(notes)


def content_blocks(content: Any) -> list[Block]:
    """`content` as blocks: a JSON list or object of blocks, else one text block."""
    if content is None:
        return []
    if isinstance(content, bytes):
        content = content.decode("utf-8", errors="replace")
    text = str(content)
    parsed = _parse_json(text)
    if isinstance(parsed, list) and parsed and all(_is_block(b) for b in parsed):
        return [dict(b) for b in parsed]
    if _is_block(parsed):
        return [dict(parsed)]
    return [{"type": "text", "text": text}] if text else []


def tool_use_blocks(tool_uses: Any, row_id: int) -> list[Block]:
    """`tool_uses` as blocks; `{name, input}`-style entries become tool_use blocks."""
    if tool_uses is None or tool_uses == "":
        return []
    raw = tool_uses.decode("utf-8", "replace") if isinstance(tool_uses, bytes) else str(tool_uses)
    parsed = _parse_json(raw)
    if parsed is _UNPARSED:
        return [{"type": "text", "text": f"[original tool_uses, unparsed] {raw}"}]
    if parsed is None or parsed == []:
        return []
    if not isinstance(parsed, list):
        parsed = [parsed]
    blocks: list[Block] = []
    for index, item in enumerate(parsed):
        if _is_block(item):
            blocks.append(dict(item))
        elif isinstance(item, dict):
            blocks.append(
                {
                    "type": "tool_use",
                    "id": str(item.get("id") or f"legacy_{row_id}_{index}"),
                    "name": str(item.get("name") or item.get("tool") or "unknown"),
                    "input": item.get("input", item.get("args", item.get("arguments", {}))),
                }
            )
        else:
            blocks.append({"type": "text", "text": f"[original tool_uses entry] {dump_json(item)}"})
    return blocks


def _tokens(role: Role, record: dict[str, Any], blocks: list[Block]) -> tuple[int, bool]:
    # The original recorded the service's usage per row: output tokens on assistant rows,
    # input tokens on the others. Without either, estimate from the stored text.
    preferred = record.get("tokens_out") if role == "assistant" else record.get("tokens_in")
    if isinstance(preferred, int) and preferred > 0:
        return preferred, True
    return estimate_tokens(dump_json(blocks)), False


def _timestamp(value: Any) -> str:
    """ISO text as it was; epoch seconds (a number, or a number in a TEXT column) as ISO UTC."""
    if value is None or value == "":
        value = 0
    if isinstance(value, str) and _EPOCH.fullmatch(value.strip()):
        value = float(value)
    if isinstance(value, int | float):
        return datetime.fromtimestamp(float(value), UTC).isoformat(timespec="milliseconds")
    return str(value)


def _parse_json(text: str) -> Any:
    try:
        return load_json(text, max_depth=STORED_DEPTH)
    except (ValueError, RecursionError):
        return _UNPARSED


def _is_block(value: Any) -> bool:
    return isinstance(value, dict) and isinstance(value.get("type"), str)
