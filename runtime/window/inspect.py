"""Where a window's tokens are: a summary of rows, slots and the last reported usage.

`summarize` is pure; `describe_window` reads a store for `mnemara show` and the REPL's `/show`.

Counts say whether they are exact (from the usage the model service reported) or estimated,
because the two can differ by tens of percent and an operator trimming a window must know.
The session's spend and its last halt come from the store's meta keys `spend` and `halt`
(written by the session, runtime/guard/halts.py), so `mnemara show` sees them from another process.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from runtime.instance.config import InstanceConfig
from runtime.window.rows import Row, Slot, estimate_tokens, text_of
from sqlitekit.jsonload import load_json

if TYPE_CHECKING:
    from runtime.store import TurnStore

# The meta keys a summary reads; readers fetch exactly these from the store.
SUMMARY_META_KEYS = ("last_usage", "forced_pinned_evictions", "spend", "halt")


@dataclass(frozen=True)
class WindowSummary:
    rows: int
    max_rows: int
    tokens: int
    exact_tokens: int  # the part of `tokens` that came from reported usage
    max_tokens: int
    pinned_rows: int
    pinned_tokens: int
    slot_tokens: int
    interrupted_rows: int
    forced_pinned_evictions: int
    last_usage: dict[str, Any] | None
    spend: dict[str, Any] | None = None
    halt: dict[str, Any] | None = None

    @property
    def source(self) -> str:
        if self.tokens == 0 or self.exact_tokens == self.tokens:
            return "reported"
        return "estimated" if self.exact_tokens == 0 else "partly estimated"


def _json_meta(meta: dict[str, str], key: str) -> dict[str, Any] | None:
    try:
        value = load_json(meta[key]) if meta.get(key) else None
    except json.JSONDecodeError:
        return None  # a damaged meta value is not worth failing `show` over
    return value if isinstance(value, dict) else None


def summarize(
    rows: Sequence[Row], slots: Sequence[Slot], config: InstanceConfig, meta: dict[str, str]
) -> WindowSummary:
    last_usage = _json_meta(meta, "last_usage")
    return WindowSummary(
        rows=len(rows),
        max_rows=config.max_window_turns,
        tokens=sum(r.tokens for r in rows),
        exact_tokens=sum(r.tokens for r in rows if r.tokens_exact),
        max_tokens=config.max_window_tokens,
        pinned_rows=sum(1 for r in rows if r.pinned),
        pinned_tokens=sum(r.tokens for r in rows if r.pinned),
        slot_tokens=sum(estimate_tokens(s.content) for s in slots),
        interrupted_rows=sum(1 for r in rows if r.status == "interrupted"),
        forced_pinned_evictions=int(meta.get("forced_pinned_evictions") or 0),
        last_usage=last_usage,
        spend=_json_meta(meta, "spend"),
        halt=_json_meta(meta, "halt"),
    )


def describe_row(row: Row, width: int = 100) -> str:
    """One line per row: id, role, flags, token count (exact or ~estimate), a preview."""
    flags = "".join(
        [
            " pinned" if row.pinned else "",
            f" [{row.label}]" if row.label else "",
            f" {row.status}" if row.status != "complete" else "",
            " compressed" if row.compressed else "",
        ]
    )
    tokens = f"{row.tokens}" if row.tokens_exact else f"~{row.tokens}"
    kinds = [b.get("type") for b in row.blocks if b.get("type") != "text"]
    extra = f" +{len(kinds)} {'/'.join(sorted({str(k) for k in kinds}))}" if kinds else ""
    preview = " ".join(text_of(row.blocks).split())
    if len(preview) > width:
        preview = preview[: width - 1] + "…"
    return f"#{row.id:<5} {row.role:<9}{flags} {tokens} tok{extra}  {preview}"


def format_summary(s: WindowSummary) -> str:
    lines = [
        f"window: {s.rows}/{s.max_rows} rows, {s.tokens}/{s.max_tokens} tokens ({s.source})",
        f"pinned: {s.pinned_rows} rows, {s.pinned_tokens} tokens; slots: ~{s.slot_tokens} tokens",
    ]
    if s.interrupted_rows:
        lines.append(f"interrupted inputs kept: {s.interrupted_rows}")
    if s.forced_pinned_evictions:
        lines.append(f"pinned rows force-evicted so far: {s.forced_pinned_evictions}")
    if s.last_usage:
        u = s.last_usage
        total = (
            u.get("input_tokens", 0)
            + u.get("cache_creation_input_tokens", 0)
            + u.get("cache_read_input_tokens", 0)
        )
        cost = u.get("cost_usd")
        lines.append(
            f"last turn (reported, all its API calls): {total} input tokens "
            f"({u.get('cache_read_input_tokens', 0)} cache read, "
            f"{u.get('cache_creation_input_tokens', 0)} cache write), "
            f"{u.get('output_tokens', 0)} output"
            + (f", ${cost:.4f}" if isinstance(cost, int | float) else "")
        )
    if s.spend:
        lines.append(format_spend(s.spend))
    if s.halt:
        lines.append(format_halt(s.halt))
    return "\n".join(lines)


def format_spend(spend: dict[str, Any]) -> str:
    """One line: what the session has spent, as the model service reported it, and its limits."""
    usd = spend.get("usd", 0.0)
    line = (
        f"spend this session: {spend.get('turns', 0)} turns, {spend.get('requests', 0)} "
        f"requests, {spend.get('input_tokens', 0)} input tokens, "
        f"{spend.get('output_tokens', 0)} output tokens, "
        + (f"${usd:.4f}" if isinstance(usd, int | float) else "$?")
    )
    limits = spend.get("limits") or {}
    if isinstance(limits, dict) and limits:
        line += " (limits: " + ", ".join(f"{k}={v}" for k, v in sorted(limits.items())) + ")"
    return line


def format_halt(halt: dict[str, Any]) -> str:
    """One line naming the halt that stopped the panel and what lifts it."""
    tag = "[SENTINEL HALT]" if halt.get("source") == "sentinel" else "[BUDGET HALT]"
    return (
        f"halted: {tag} {halt.get('rule', '?')}: {halt.get('message', '')} "
        f"(turn {halt.get('turn', '?')}, {halt.get('at', '?')}); resume the panel to go on"
    )


@dataclass(frozen=True)
class WindowView:
    rows: list[Row]
    slots: list[Slot]
    summary: WindowSummary

    def as_text(self) -> str:
        lines = [describe_row(r) for r in self.rows]
        for slot in self.slots:
            lines.append(f"slot {slot.position}: {slot.label} ({slot.role}) = {slot.content}")
        if not lines:
            lines.append("(the window is empty)")
        lines.append("")
        lines.append(format_summary(self.summary))
        return "\n".join(lines)

    def summary_text(self) -> str:
        return format_summary(self.summary)

    def as_dict(self) -> dict[str, Any]:
        return {
            "rows": [asdict(r) for r in self.rows],
            "slots": [asdict(s) for s in self.slots],
            "summary": asdict(self.summary) | {"source": self.summary.source},
        }


def describe_window(store: TurnStore, config: InstanceConfig, last: int = 0) -> WindowView:
    rows = store.rows()
    slots = store.slots()
    meta = {k: v for k in SUMMARY_META_KEYS if (v := store.get_meta(k))}
    summary = summarize(rows, slots, config, meta)
    shown = rows[-last:] if last > 0 else rows
    return WindowView(shown, slots, summary)
