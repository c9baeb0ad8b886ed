"""Events as lines a person reads: `mnemara logs`, `up --headless` and the demo's account. Pure.

Text from models and peers is untrusted: control characters are stripped and every line is
cut to a width, so nothing a panel writes can move the cursor or forge another line.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Sequence
from typing import Any

from panels.hostdb import Event, PanelRow
from peerbus.render import strip_controls

WIDTH = 110


def clean(value: Any, limit: int = 160) -> str:
    text = " ".join(strip_controls(str(value)).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _line(event: Event) -> str | None:
    d, who = event.data, event.panel or "host"
    kind = event.kind
    if kind == "command" and d.get("verb") == "input":
        return f"operator -> {who}: {clean(d.get('args', {}).get('text', ''))}"
    if kind == "command":
        ok = "ok" if d.get("ok") else "FAILED"
        return f"command {d.get('verb')} {who}: {ok}: {clean(d.get('outcome', ''))}"
    if kind == "text":
        return f"{who} says: {clean(d.get('text', ''), 300)}"
    if kind == "tool_call":
        return f"{who} calls {_tool(d.get('tool', ''))} {clean(d.get('input', ''), 120)}"
    if kind == "tool_result":
        flag = "error" if d.get("error") else "result"
        return f"{who}   {flag}: {clean(d.get('content', ''), 120)}"
    if kind == "send":
        terminal = " (terminal)" if d.get("terminal") else ""
        return f"{who} -> {d.get('to')} message {d.get('id')}{terminal}: {clean(d.get('text'))}"
    if kind == "delivery":
        return f"{who} <- turn {d.get('turn')}: message(s) {d.get('ids')} from {d.get('senders')}"
    if kind == "halt":
        return f"{who} HALTED by {d.get('by', 'host')}: {d.get('rule')}: {clean(d.get('message'))}"
    if kind == "watchdog_action":
        return (
            f"{d.get('actor')} {d.get('verb')} {who}: {clean(d.get('text'))} -> {d.get('outcome')}"
        )
    if kind == "digest":
        alerts = d.get("alerts") or []
        return f"host -> {who} digest (message {d.get('id')})" + (
            f", alerts: {clean('; '.join(alerts))}" if alerts else ", no alerts"
        )
    if kind == "turn_ended":
        return (
            f"{who} turn {d.get('turn')} {d.get('outcome')}: {d.get('tool_calls')} tool call(s), "
            f"{d.get('input_tokens')} in / {d.get('output_tokens')} out tokens, "
            f"${float(d.get('usd') or 0):.4f}"
            + (f"; {clean(d.get('error'))}" if d.get("error") else "")
        )
    if kind in ("panel_failed", "panel_given_up", "panel_restarting"):
        detail = d.get("error") or d.get("reason") or f"in {d.get('delay')}s"
        return f"{who} {kind.removeprefix('panel_').replace('_', ' ')}: {clean(detail)}"
    if kind == "approval_request":
        return (f"{who} ASKS (request {d.get('request')}): {d.get('tool')} "
                f"{clean(d.get('target'))} ({clean(d.get('reason'))})")  # fmt: skip
    if kind == "approval_answer":
        return f"{who} approval {d.get('request')}: {d.get('answer')}"
    if kind in ("stale_delivery", "redelivery_skipped"):
        return f"{who} {kind.replace('_', ' ')}: {d.get('ids')}"
    if kind in ("host_started", "host_ready", "host_stopping", "host_stopped"):
        return f"{kind.replace('_', ' ')}"
    if kind == "panel_started":
        return f"{who} started (epoch {d.get('epoch')}, model {d.get('model')})"
    if kind in ("inbox", "model", "tokens", "sentinel", "warning"):
        return f"{who} {kind}: {clean({k: v for k, v in d.items() if k != 'calls'})}"
    return None


def _tool(name: str) -> str:
    return name.removeprefix("mcp__mnemara__")


def format_event(event: Event, start: float | None = None, *, verbose: bool = False) -> str | None:
    """One line for an event, or None for events only `verbose` shows."""
    line = _line(event)
    if line is None:
        if not verbose:
            return None
        line = f"{event.panel or 'host'} {event.kind}: {clean(event.data)}"
    stamp = f"{event.ts - start:6.1f}s" if start is not None else f"#{event.id}"
    return f"{stamp}  {line}"[: WIDTH * 3]


def printer(out: Callable[[str], None], *, skip: Collection[str] = ()) -> Callable[[Event], None]:
    """A host listener that prints each event as a line, timed from the first event seen."""
    first: list[float] = []

    def show(event: Event) -> None:
        if not first:
            first.append(event.ts)
        line = format_event(event, first[0])
        if line is not None and event.kind not in skip:
            out(line)

    return show


def account(events: Iterable[Event], *, verbose: bool = False) -> list[str]:
    events = list(events)
    start = events[0].ts if events else 0.0
    lines = [format_event(e, start, verbose=verbose) for e in events]
    return [line for line in lines if line is not None]


def table(rows: Sequence[PanelRow]) -> list[str]:
    """`ps`: one line per panel."""
    head = (
        f"{'panel':<14}{'kind':<10}{'state':<12}{'turns':>6}{'in tok':>10}{'out tok':>9}"
        f"{'usd':>10}  inbox  detail"
    )
    out = [head]
    for r in rows:
        out.append(
            f"{clean(r.name, 13):<14}{clean(r.kind, 9):<10}{r.state:<12}{r.turns:>6}"
            f"{r.input_tokens:>10}{r.output_tokens:>9}{r.usd:>10.4f}  {'on ' if r.inbox else 'off'}"
            f"    {clean(r.detail, 60)}"
        )
    return out
