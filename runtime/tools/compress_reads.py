"""`compress_repeated_reads`: older Reads of a file become a diff or an "unchanged" stub.

When the window holds several successful Reads of the same file (same offset and limit), the
newest keeps its full text and each older result is replaced by a pointer to it: "unchanged"
when the texts are equal, else a unified diff from the older text to the newer one, kept only
when it is shorter than what it replaces. Rewritten rows are flagged `compressed` (which
`preserve_compressed_reads` protects from trimming). Pinned rows and the turn in flight are
left alone; a result cut by the tool-result cap is never the basis of a diff.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from runtime.store import AsyncTurnStore
from runtime.window.rows import Block, Row, estimate_tokens

STUB_PREFIX = "[mnemara: earlier Read of "
_TRUNCATED = "chars truncated by mnemara"


@dataclass(frozen=True)
class SeenRead:
    row_id: int
    index: int  # of the tool_result block in the row
    key: tuple[str, str]  # (file path, the other inputs as JSON)
    text: str
    editable: bool


def _text(content: Any) -> str | None:
    if isinstance(content, str):
        return content
    if isinstance(content, list) and all(
        isinstance(p, dict) and p.get("type") == "text" for p in content
    ):
        return "\n".join(str(p.get("text", "")) for p in content)
    return None


def find_reads(rows: Sequence[Row]) -> list[SeenRead]:
    """Successful Read results in window order, with what identifies the read."""
    found: list[SeenRead] = []
    for row in rows:
        calls: dict[str, tuple[str, str]] = {}
        for i, block in enumerate(row.blocks):
            if block.get("type") == "tool_use" and block.get("name") == "Read":
                inp = block.get("input") or {}
                path = inp.get("file_path")
                if isinstance(path, str) and not inp.get("_evicted"):
                    rest = {k: v for k, v in inp.items() if k != "file_path"}
                    calls[str(block.get("id"))] = (path, json.dumps(rest, sort_keys=True))
            elif block.get("type") == "tool_result" and not block.get("is_error"):
                key = calls.get(str(block.get("tool_use_id")))
                text = _text(block.get("content"))
                if key is not None and text is not None and not text.startswith(STUB_PREFIX):
                    editable = not row.pinned and row.status != "in_flight"
                    found.append(SeenRead(row.id, i, key, text, editable))
    return found


def stub_for(older: str, newer: str, path: str, newer_row: int) -> str | None:
    """The stub that replaces `older`, or None when it would not be smaller."""
    if older == newer:
        stub = f"{STUB_PREFIX}{path}: unchanged; identical to the later Read in row {newer_row}]"
    elif _TRUNCATED in older or _TRUNCATED in newer:
        return None
    else:
        diff = difflib.unified_diff(
            older.splitlines(),
            newer.splitlines(),
            "this read",
            f"row {newer_row}",
            lineterm="",
            n=1,
        )
        stub = (
            f"{STUB_PREFIX}{path}: shown as a diff to the later Read in row {newer_row} "
            "('-' lines were in this read)]\n" + "\n".join(diff)
        )
    return stub if len(stub) < len(older) else None


def plan_compress_reads(rows: Sequence[Row]) -> dict[int, tuple[Block, ...]]:
    """Row id -> its new blocks, for every row where an older Read can be stubbed."""
    reads = find_reads(rows)
    newest: dict[tuple[str, str], SeenRead] = {}
    for seen in reads:
        newest[seen.key] = seen
    blocks = {r.id: list(r.blocks) for r in rows}
    changed: set[int] = set()
    for seen in reads:
        latest = newest[seen.key]
        if seen is latest or not seen.editable:
            continue
        stub = stub_for(seen.text, latest.text, seen.key[0], latest.row_id)
        if stub is not None:
            block = blocks[seen.row_id][seen.index]
            blocks[seen.row_id][seen.index] = {**block, "content": stub}
            changed.add(seen.row_id)
    return {row_id: tuple(blocks[row_id]) for row_id in sorted(changed)}


async def compress_reads(store: AsyncTurnStore) -> list[int]:
    """Apply the plan to the store; returns the rows rewritten."""
    plan = plan_compress_reads(await store.rows())
    for row_id, new_blocks in plan.items():
        tokens = estimate_tokens(json.dumps(list(new_blocks), ensure_ascii=False))
        await store.replace_blocks(row_id, new_blocks, tokens, compressed=True)
    return list(plan)
