"""Capping stored tool results: keep the head and the tail, and say visibly what was cut.

The next turn needs to know what its tools returned, but a 2 MB log should not ride along in
every prompt after it. `cap_tool_results` applies the instance's `tool_result_max_chars` to the
text inside `tool_result` blocks before a turn is stored; other blocks are left untouched.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from runtime.window.rows import Block

# Of the characters kept, this share comes from the start (where commands print what they are
# doing); the rest from the end (where the error or summary usually is).
_HEAD_SHARE = 2 / 3


def truncation_marker(cut: int) -> str:
    return f"\n[... {cut:,} chars truncated by mnemara ...]\n"


def truncate_tool_result(text: str, cap: int) -> str:
    """`text` if it fits in `cap` characters, else its head and tail around a visible marker.

    The result is at most `cap` characters long unless `cap` is smaller than the marker itself,
    in which case the marker alone (with at least one character either side kept) is returned.
    """
    if cap < 0:
        raise ValueError(f"cap must not be negative, got {cap}")
    if len(text) <= cap:
        return text
    # The marker's length depends on the number it reports; two passes settle it.
    keep = cap
    for _ in range(2):
        keep = max(2, cap - len(truncation_marker(len(text) - keep)))
    keep = min(keep, len(text) - 1)
    head = round(keep * _HEAD_SHARE)
    tail = keep - head
    cut = len(text) - head - tail
    return text[:head] + truncation_marker(cut) + (text[-tail:] if tail else "")


def cap_tool_results(blocks: Sequence[Block], cap: int) -> tuple[Block, ...]:
    """`blocks` with the text of every `tool_result` truncated to `cap` characters."""
    return tuple(_cap_block(block, cap) for block in blocks)


def _cap_block(block: Block, cap: int) -> Block:
    if block.get("type") != "tool_result":
        return block
    content = block.get("content")
    if isinstance(content, str):
        capped: Any = truncate_tool_result(content, cap)
    elif isinstance(content, list):
        capped = [_cap_part(part, cap) for part in content]
    else:
        return block
    if capped == content:
        return block
    return {**block, "content": capped}


def _cap_part(part: Any, cap: int) -> Any:
    if isinstance(part, dict) and part.get("type") == "text" and isinstance(part.get("text"), str):
        text = truncate_tool_result(part["text"], cap)
        return part if text == part["text"] else {**part, "text": text}
    return part
