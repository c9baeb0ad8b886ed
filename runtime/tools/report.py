"""`inspect_context`'s answer: where a request's input tokens go, as a pure function.

Parts we assemble ourselves are estimated (~4 characters a token) unless a row carries the
count the model service reported; the CLI adds its own native tools' and MCP servers' schemas
and a few instructions, which only the reported total of the last request includes.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from runtime.instance.config import InstanceConfig
from runtime.turn.driver import ToolSpec
from runtime.window.inspect import format_halt, format_spend
from runtime.window.rows import Row, Slot, estimate_tokens


@dataclass(frozen=True)
class ContextParts:
    role_text: str
    tools: Sequence[ToolSpec]
    rows: Sequence[Row]
    slots: Sequence[Slot]
    manifest: str | None
    config: InstanceConfig
    last_usage: dict[str, Any] | None
    spend: dict[str, Any] | None
    halt: dict[str, Any] | None = None


def schema_tokens(tools: Sequence[ToolSpec]) -> int:
    described = [
        {"name": t.name, "description": t.description, "input_schema": t.input_schema}
        for t in tools
    ]
    return estimate_tokens(json.dumps(described, sort_keys=True)) if tools else 0


def context_report(p: ContextParts) -> str:
    pinned = [r for r in p.rows if r.pinned]
    window = [r for r in p.rows if not r.pinned]
    parts = [
        ("role doc (system prompt)", f"~{estimate_tokens(p.role_text) if p.role_text else 0}"),
        (f"mnemara tool schemas ({len(p.tools)} tools)", f"~{schema_tokens(p.tools)}"),
        (f"pinned rows ({len(pinned)})", _count(pinned)),
        (f"slots ({len(p.slots)})", f"~{sum(estimate_tokens(s.content) for s in p.slots)}"),
        (f"window rows ({len(window)} unpinned)", _count(window)),
        ("file manifest", f"~{estimate_tokens(p.manifest)}" if p.manifest else "off or empty"),
    ]
    width = max(len(name) for name, _ in parts)
    lines = ["where the input tokens go (~ = estimated at 4 characters a token):"]
    lines += [f"  {name.ljust(width)}  {value}" for name, value in parts]
    total = sum(r.tokens for r in p.rows)
    lines.append(
        f"window caps: {len(p.rows)}/{p.config.max_window_turns} rows, "
        f"{total}/{p.config.max_window_tokens} tokens (pinned included)"
    )
    lines.append("not counted here: the CLI's native tools, MCP servers' tools, its own text")
    if p.last_usage:
        u = p.last_usage
        prompt = sum(
            int(u.get(k, 0) or 0)
            for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
        )
        lines.append(
            f"last turn (reported): {prompt} input tokens, "
            f"{u.get('cache_read_input_tokens', 0)} of them read from the cache, "
            f"{u.get('output_tokens', 0)} output tokens"
        )
    if p.spend:
        lines.append(format_spend(p.spend))
    if p.halt:
        lines.append(format_halt(p.halt))
    return "\n".join(lines)


def _count(rows: Sequence[Row]) -> str:
    tokens = sum(r.tokens for r in rows)
    exact = all(r.tokens_exact for r in rows)
    return f"{tokens}" if exact and rows else f"~{tokens}"
