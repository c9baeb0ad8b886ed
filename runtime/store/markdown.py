"""The readable export (`/export --markdown`): role doc, slots and the window as Markdown.

Meant for people, not for import: blocks are summarised (tool inputs as JSON, thinking folded
away), and the JSONL export (export.py) is the one that round-trips.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, TextIO

from runtime.store.codec import utc_now
from runtime.store.turn_store import TurnStore
from runtime.window.rows import Block, Row


def export_markdown(store: TurnStore, out: TextIO, *, instance: str, role_doc_text: str) -> None:
    """Write the store as one Markdown document."""
    snap = store.snapshot()
    write = _writer(out)
    write(f"# mnemara export: {instance}\n\n")
    write(f"Exported {utc_now()}; {len(snap.rows)} rows, {len(snap.slots)} slots.\n\n")
    write("## Role doc\n\n")
    write(_fenced(role_doc_text or "(no role doc)", "markdown"))
    if snap.slots:
        write("## Slots\n\n")
        for slot in snap.slots:
            write(f"- **#{slot.position:02d} {slot.label}** ({slot.role}): {slot.content}\n")
        write("\n")
    if snap.markers:
        write("## Markers\n\n")
        for marker in snap.markers:
            write(f"- `{marker.name}` after row {marker.after_row_id}\n")
        write("\n")
    write("## Window\n\n")
    for row in snap.rows:
        write(_heading(row))
        for block in row.blocks:
            write(render_block(block))
    if not snap.rows:
        write("(empty)\n")


def _writer(out: TextIO) -> Callable[[str], None]:
    # Tool output can hold lone surrogates; a reader gets "?" instead of an encoding error.
    def write(text: str) -> None:
        out.write(text.encode("utf-8", "replace").decode("utf-8"))

    return write


def _heading(row: Row) -> str:
    tags = [row.ts, f"{row.tokens} tokens" + ("" if row.tokens_exact else " (est.)")]
    if row.pinned:
        tags.append(f"pinned {row.label}".rstrip())
    elif row.label:
        tags.append(f"label {row.label}")
    if row.status != "complete":
        tags.append(row.status.replace("_", " "))
    if row.compressed:
        tags.append("compressed")
    return f"### #{row.id} {row.role} · {' · '.join(tags)}\n\n"


def render_block(block: Block) -> str:
    kind = block.get("type")
    if kind == "text":
        return f"{block.get('text', '')}\n\n"
    if kind == "thinking":
        text = str(block.get("thinking", ""))
        return f"<details><summary>thinking</summary>\n\n{text}\n\n</details>\n\n"
    if kind == "redacted_thinking":
        return "_(redacted thinking)_\n\n"
    if kind == "tool_use":
        head = f"**tool call** `{block.get('name', '?')}` (id `{block.get('id', '?')}`)\n\n"
        return head + _fenced(_json(block.get("input", {})), "json")
    if kind == "tool_result":
        error = " (error)" if block.get("is_error") else ""
        head = f"**tool result**{error} for `{block.get('tool_use_id', '?')}`\n\n"
        return head + _fenced(_result_text(block.get("content")), "")
    return _fenced(_json(block), "json")


def _result_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [
            str(part.get("text", "")) if isinstance(part, dict) and "text" in part else _json(part)
            for part in content
        ]
        return "\n".join(parts)
    return _json(content)


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, indent=2, sort_keys=True)


def _fenced(text: str, lang: str) -> str:
    # A fence longer than any backtick run inside, so the text cannot close it early.
    run, fence = 0, 3
    for ch in text:
        run = run + 1 if ch == "`" else 0
        fence = max(fence, run + 1)
    ticks = "`" * fence
    return f"{ticks}{lang}\n{text}\n{ticks}\n\n"
