"""A request's prompt in cache order: the units the prompt cache keys on, and their tokens.

The service caches an exact prefix in the order tools → system → messages. Here a request
body becomes a tuple of `Unit`s in that order, one per tool definition, system block and
message content block (a message with string content is one unit). Each unit has:

- `key`: canonical JSON of the block (sorted keys, no spaces) with its own `cache_control`
  removed, since moving a marker does not change the prompt. The first unit of each message
  also carries the message's other fields (role, `output_config`); the first message unit
  also carries the request's `thinking` and `tool_choice`, because changing those invalidates
  cached messages but not cached tools or system blocks.
- `tokens`: the `TokenCounter` applied to the block's visible text (a text block's text, a
  tool call's name and input JSON, a tool result's text, a tool definition's JSON). The
  default counter is deterministic: 4 characters a token, rounded up per block. Real
  tokenizers differ; pass your own counter if the absolute figures matter.
- `ttl`: "5m" or "1h" when the block carries `cache_control` (a breakpoint), else None.

The billing header the CLI puts in `system[0]` (`x-anthropic-billing-header: …`) changes
with the prompt's first characters, and the CLI's own cache bookkeeping leaves it out; it is
kept out of the key here too and billed as plain input (`Layout.unkeyed_tokens`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol

Ttl = Literal["5m", "1h"]
BILLING_HEADER_PREFIX = "x-anthropic-billing-header:"


class TokenCounter(Protocol):
    def count(self, text: str) -> int: ...


@dataclass(frozen=True)
class ApproxTokenCounter:
    """About `chars_per_token` characters a token, rounded up; empty text is 0 tokens."""

    chars_per_token: float = 4.0

    def count(self, text: str) -> int:
        return math.ceil(len(text) / self.chars_per_token) if text else 0


@dataclass(frozen=True)
class Unit:
    label: str
    key: bytes
    tokens: int
    ttl: Ttl | None = None


@dataclass(frozen=True)
class Layout:
    model: str
    units: tuple[Unit, ...]
    unkeyed_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.unkeyed_tokens + sum(u.tokens for u in self.units)

    @property
    def prompt_bytes(self) -> bytes:
        """The cache-order prompt as one byte string; divergence offsets index into it."""
        return b"".join(u.key for u in self.units)


@dataclass(frozen=True)
class Divergence:
    """Where a request's prompt stopped matching the previous request's."""

    offset: int  # first differing byte of `Layout.prompt_bytes`
    unit: str  # label of this request's unit holding that byte ("(end)" past the last)
    previous: str  # a short excerpt of each side from the offset
    current: str


def canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def _ttl(block: Mapping[str, Any]) -> Ttl | None:
    marker = block.get("cache_control")
    if not isinstance(marker, dict):
        return None
    return "1h" if marker.get("ttl") == "1h" else "5m"


def _strip(block: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in block.items() if k != "cache_control"}


def visible_text(block: Any) -> str:
    """The part of a block that the model reads, for counting tokens."""
    if isinstance(block, str):
        return block
    if not isinstance(block, dict):
        return canonical(block)
    kind = block.get("type")
    if kind == "text":
        return str(block.get("text", ""))
    if kind == "thinking":
        return str(block.get("thinking", ""))
    if kind == "tool_use":
        return str(block.get("name", "")) + canonical(block.get("input", {}))
    if kind == "tool_result":
        content = block.get("content", "")
        parts = content if isinstance(content, list) else [content]
        return "".join(visible_text(p) for p in parts)
    return canonical(_strip(block))


def layout_of(body: Mapping[str, Any], counter: TokenCounter) -> Layout:
    """The request's prompt in cache order (pure)."""
    units: list[Unit] = []
    unkeyed = 0

    def add(label: str, block: Any, head: Mapping[str, Any] | None = None) -> None:
        value = _strip(block) if isinstance(block, dict) else block
        key = canonical({"head": head, "block": value} if head else value)
        ttl = _ttl(block) if isinstance(block, dict) else None
        units.append(Unit(label, key.encode(), counter.count(visible_text(block)), ttl))

    for i, tool in enumerate(_listed(body.get("tools"))):
        add(f"tools[{i}]", tool)
    system = body.get("system")
    if isinstance(system, str):
        add("system", system)
    for i, block in enumerate(_listed(system)):
        if str(block.get("text", "")).startswith(BILLING_HEADER_PREFIX):
            unkeyed += counter.count(visible_text(block))
            continue
        add(f"system[{i}]", block)
    settings = {k: body[k] for k in ("thinking", "tool_choice") if k in body}
    for i, message in enumerate(_listed(body.get("messages"))):
        head: dict[str, Any] = {k: v for k, v in message.items() if k != "content"}
        if i == 0 and settings:
            head["settings"] = settings
        content = message.get("content")
        if isinstance(content, str) or not content:
            add(f"messages[{i}]", content or "", head)
            continue
        for j, block in enumerate(_listed(content)):
            add(f"messages[{i}].content[{j}]", block, head if j == 0 else None)
    return Layout(str(body.get("model", "")), tuple(units), unkeyed)


def _listed(value: Any) -> list[dict[str, Any]]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def first_divergence(previous: Layout, current: Layout, *, excerpt: int = 40) -> Divergence | None:
    """The first byte where `current`'s prompt differs from `previous`'s, or None if equal."""
    if previous.model != current.model:
        return Divergence(0, "model", previous.model, current.model)
    # Skip whole equal units first; only the first differing pair is compared byte by byte.
    offset = 0
    for old, new in zip(previous.units, current.units, strict=False):
        if old.key == new.key:
            offset += len(old.key)
            continue
        limit = min(len(old.key), len(new.key))
        offset += next((i for i in range(limit) if old.key[i] != new.key[i]), limit)
        break
    old_bytes, new_bytes = previous.prompt_bytes, current.prompt_bytes
    if offset == len(old_bytes) == len(new_bytes):
        return None
    unit, start = "(end)", 0
    for u in current.units:
        if offset < start + len(u.key):
            unit = u.label
            break
        start += len(u.key)

    def snip(data: bytes) -> str:
        return data[offset : offset + excerpt].decode("utf-8", errors="replace")

    return Divergence(offset, unit, snip(old_bytes), snip(new_bytes))
