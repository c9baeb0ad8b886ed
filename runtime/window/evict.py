"""Block-level eviction: pure functions that shrink a row's blocks and keep the audit shell.

Used by the `/evict` commands, the agent's eviction tools, and the one-time recovery from a
prompt-too-long answer. Each returns new blocks (never mutates) and leaves a visible stub, so
the transcript still says what happened ("I edited /foo/bar.py") without the bulky bodies.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from runtime.window.rows import Block

WRITE_TOOLS = frozenset({"Edit", "Write", "MultiEdit", "NotebookEdit"})
# Input keys that identify a call and are kept when its body is evicted.
_SHELL_KEYS = ("file_path", "path", "notebook_path", "command", "pattern", "url", "description")


def strip_thinking(blocks: Sequence[Block]) -> tuple[Block, ...]:
    return tuple(b for b in blocks if b.get("type") not in ("thinking", "redacted_thinking"))


def _shell(inp: Any) -> dict[str, Any]:
    if not isinstance(inp, dict):
        return {"_evicted": True}
    kept = {k: inp[k] for k in _SHELL_KEYS if k in inp and isinstance(inp[k], str)}
    if "command" in kept and len(kept["command"]) > 200:
        kept["command"] = kept["command"][:200] + "…"
    return {**kept, "_evicted": True}


def strip_tool_use_bodies(blocks: Sequence[Block]) -> tuple[Block, ...]:
    """Replace tool_use inputs with their identifying keys, and tool_result bodies with a stub."""
    out: list[Block] = []
    for b in blocks:
        if b.get("type") == "tool_use" and not b.get("input", {}).get("_evicted"):
            out.append({**b, "input": _shell(b.get("input"))})
        elif b.get("type") == "tool_result" and b.get("content") != "[evicted]":
            out.append({**b, "content": "[evicted]"})
        else:
            out.append(b)
    return tuple(out)


def strip_bulk(blocks: Sequence[Block]) -> tuple[Block, ...]:
    """Everything evictable at once: thinking, tool bodies and tool results."""
    return strip_tool_use_bodies(strip_thinking(blocks))


def written_paths(blocks: Sequence[Block]) -> set[str]:
    paths: set[str] = set()
    for b in blocks:
        if b.get("type") == "tool_use" and b.get("name") in WRITE_TOOLS:
            inp = b.get("input") or {}
            path = inp.get("file_path") or inp.get("notebook_path")
            if isinstance(path, str):
                paths.add(path)
    return paths


def strip_write_pairs(blocks: Sequence[Block], paths: set[str]) -> tuple[Block, ...]:
    """Stub write calls and Read calls (with their results) for the given file paths."""
    stubbed_ids: set[str] = set()
    out: list[Block] = []
    for b in blocks:
        if b.get("type") == "tool_use" and b.get("name") in (WRITE_TOOLS | {"Read"}):
            inp = b.get("input") or {}
            path = inp.get("file_path") or inp.get("notebook_path")
            if path in paths:
                stubbed_ids.add(str(b.get("id")))
                out.append({**b, "input": {"file_path": path, "_evicted": True}})
                continue
        if b.get("type") == "tool_result" and str(b.get("tool_use_id")) in stubbed_ids:
            out.append({**b, "content": "[evicted]"})
            continue
        out.append(b)
    return tuple(out)
