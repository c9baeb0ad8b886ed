"""Prompt assembly, pure and deterministic, laid out for the prompt cache (DESIGN.md section 5).

One user message per turn:
  [head]        fixed text, the same bytes on every turn
  [transcript]  one block per stored row, oldest first; our cache_control marker on the last
  [tail]        slots, the file manifest, the inbox batch, then the current input

The system prompt is the role doc alone. A row renders to the same bytes every time it is
sent (sorted JSON keys, no clocks), so two turns with no edit in between share their prefix.
Thinking blocks are not re-sent; a row with nothing else to show is left out.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from runtime.turn.cache_ttl import CacheTtl, cache_marker
from runtime.window.rows import Block, Row, Slot

HEAD_TEXT = (
    "<<mnemara transcript v1>>\n"
    "The blocks after this one are the conversation so far, oldest first, one per stored row. "
    "After the transcript come the current slots, file manifest and inbox (current state, "
    "authoritative), and last the new input to answer."
)
INTERRUPTED_NOTE = "[no reply was recorded: the session stopped before this input was answered]"


@dataclass(frozen=True)
class Prompt:
    system: str
    # Read-only: transcript blocks may be shared with earlier prompts (turn/render_cache.py).
    blocks: tuple[Block, ...]
    transcript_rows: int  # rows rendered into the transcript


def _dump(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(", ", ": "))


def _tool_result_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [str(c.get("text", "")) if isinstance(c, dict) else str(c) for c in content]
        return "\n".join(parts)
    return _dump(content)


def render_block(block: Block) -> str | None:
    kind = block.get("type")
    if kind == "text":
        text = str(block.get("text", ""))
        return text if text.strip() else None
    if kind == "thinking" or kind == "redacted_thinking":
        return None
    if kind == "tool_use":
        return (
            f"[tool_use {block.get('name')} id={block.get('id')}] {_dump(block.get('input', {}))}"
        )
    if kind == "tool_result":
        flag = " error" if block.get("is_error") else ""
        body = _tool_result_text(block.get("content", ""))
        return f"[tool_result for={block.get('tool_use_id')}{flag}] {body}"
    return f"[{kind}] {_dump(block)}"


def render_row(row: Row) -> str | None:
    """The text of one row as the model sees it, or None if nothing in it is re-sent."""
    parts = [p for p in (render_block(b) for b in row.blocks) if p is not None]
    if row.status == "interrupted":
        parts.append(INTERRUPTED_NOTE)
    if not parts:
        return None
    return f"[row {row.id} · {row.role}]\n" + "\n".join(parts)


_ROW_HEADER = re.compile(r"\[row (\d+) · [a-z]+\]\n")


def rendered_row_id(text: str) -> int | None:
    """The id of the row `render_row` rendered as `text`, or None for any other text."""
    found = _ROW_HEADER.match(text)
    return int(found.group(1)) if found else None


def text_block(text: str) -> Block:
    """The prompt block carrying `text` (a rendered row, the head, a slot list...)."""
    return {"type": "text", "text": text}


def render_slots(slots: Sequence[Slot]) -> str | None:
    if not slots:
        return None
    lines = ["<<slots: current values, updated in place>>"]
    for slot in sorted(slots, key=lambda s: (s.position, s.label)):
        lines.append(f"[slot {slot.label} · {slot.role}]\n{slot.content}")
    return "\n".join(lines)


def render_transcript(rows: Sequence[Row]) -> list[Block]:
    """The transcript blocks of `rows`, rows with nothing to show left out (what a
    `RenderCache` gives too, keeping the blocks from turn to turn)."""
    return [text_block(text) for text in map(render_row, rows) if text is not None]


def build_prompt(
    *,
    role_doc: str,
    transcript: Sequence[Block],
    slots: Sequence[Slot] = (),
    manifest: str | None = None,
    inbox: str | None = None,
    input_text: str | None = None,
    cache_ttl: CacheTtl = "5m",
) -> Prompt:
    """Assemble one turn's request from the rendered transcript (`render_transcript` of the
    rows before the turn's input, or a `RenderCache`'s). Its blocks go into the prompt as they
    are and are never changed, so a caller may keep them from turn to turn."""
    blocks: list[Block] = [text_block(HEAD_TEXT), *transcript]
    rendered = len(transcript)
    # The one breakpoint of our own: the end of the stable part. The CLI adds its own later.
    # `cache_ttl` must match the CLI's own markers (runtime/turn/cache_ttl.py).
    blocks[-1] = {**blocks[-1], "cache_control": cache_marker(cache_ttl)}
    for extra in (render_slots(slots), manifest, inbox, input_text):
        if extra is not None and extra.strip():
            blocks.append({"type": "text", "text": extra})
    return Prompt(system=role_doc, blocks=tuple(blocks), transcript_rows=rendered)


def strip_cache_markers(blocks: Sequence[Block]) -> list[Block]:
    """Blocks without cache_control, for comparing prefixes between turns."""
    return [{k: v for k, v in b.items() if k != "cache_control"} for b in blocks]
