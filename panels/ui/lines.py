"""What the dashboard shows, as plain strings: transcript lines, status lines, the layout. Pure.

Text from models, peers and tools is untrusted: every piece goes through `clean` (control
characters stripped, one line, cut to a width) before it is shown, and the widgets render
these strings with markup off, so `[bold]` stays `[bold]` and an ESC cannot reach the
terminal.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from panels.host.account import clean
from panels.hostdb import PanelRow
from panels.hostdb import catalogue as ev

MAX_PANELS = 16
TEXT_LINES = 200  # lines of one reply shown; the rest is summarised
TEXT_WIDTH = 400


def _tool(name: str) -> str:
    return clean(name.removeprefix("mcp__mnemara__"), 60)


def transcript_lines(event: ev.HostEvent) -> list[str]:
    """The lines a panel's transcript shows for one of its events (none for the kinds the
    status line covers, such as state changes)."""
    match event:
        case ev.Said():
            return _text_lines(event.text)
        case ev.VerbApplied(verb="input" | "nudge", ok=True):
            return [f"{clean(event.by, 40)} > {clean(event.text, TEXT_WIDTH)}"]
        case ev.VerbApplied():
            refused = "" if event.ok else "REFUSED: "
            args = f" ({clean(event.summary, 80)})" if event.summary else ""
            return [f"· {clean(event.by, 40)} {clean(event.verb, 20)}{args}: {refused}"
                    + clean(event.outcome)]  # fmt: skip
        case ev.ToolCalled():
            return [f"→ {_tool(event.tool)} {clean(event.input, 120)}"]
        case ev.ToolAnswered():
            flag = "✗ error" if event.error else "← result"
            return [f"  {flag}: {clean(event.content, 120)}"]
        case ev.Delivered():
            senders = ", ".join(clean(s, 40) for s in event.senders) or "nobody"
            return [f"· turn {event.turn} takes {len(event.ids)} message(s) from {senders}"]
        case ev.TurnEnded():
            error = f": {clean(event.error)}" if event.error else ""
            return [f"· turn {event.turn} {clean(event.outcome, 20)}{error} "
                    f"({event.tool_calls} tool call(s), {event.input_tokens} in / "
                    f"{event.output_tokens} out, ${event.usd:.4f})"]  # fmt: skip
        case ev.Halted():
            return [f"! HALTED by {clean(event.by, 40)}: {clean(event.rule, 60)}: "
                    + clean(event.message)]  # fmt: skip
        case ev.Resumed():
            return [f"· resumed by {clean(event.by, 40)}"]
        case ev.MessageSent():
            return [f"→ message to {clean(event.to, 40)}: {clean(event.text)}"]
        case ev.ApprovalAsked():
            return [f"? asks (request {event.request}): {_tool(event.tool)} {clean(event.target)}"]
        case ev.ApprovalAnswered():
            return [f"· approval {event.request}: {clean(event.answer, 40)}"]
        case ev.PanelStarted():
            return [f"· started (epoch {event.epoch}, model {clean(event.model, 60)})"]
        case ev.PanelFailed():
            return [f"! failed: {clean(event.error)}"]
        case ev.PanelGivenUp():
            return [f"! given up: {clean(event.reason)}"]
        case ev.Warned():
            return [f"! warning: {clean(event.message)}"]
        case ev.DeadLettered():
            return [f"! dead letter: message {event.id}: {clean(event.reason)}"]
        case ev.UnknownEvent():
            return [f"? {clean(event.stored_kind, 40)} (not readable here: {clean(event.why)})"]
    return []


def _text_lines(text: str) -> list[str]:
    lines = text.splitlines() or [""]
    shown = [clean(line, TEXT_WIDTH) for line in lines[:TEXT_LINES]]
    if len(lines) > TEXT_LINES:
        shown.append(f"… ({len(lines) - TEXT_LINES} more lines)")
    return shown


def status_line(row: PanelRow | None) -> str:
    """One panel's status row in one line."""
    if row is None:
        return "no status yet"
    detail = f" ({clean(row.detail, 40)})" if row.detail else ""
    return (
        f"{clean(row.state, 20)}{detail} · turns {row.turns} · "
        f"{row.input_tokens} in / {row.output_tokens} out · ${row.usd:.4f} · "
        f"inbox {'on' if row.inbox else 'off'} · epoch {row.epoch} · {clean(row.model, 40) or '-'}"
    )


def header_line(meta: dict[str, str], *, running: bool, panels: int, waiting: int = 0) -> str:
    team = clean(meta.get("team", "?"), 64)
    line = f"team {team} · host {'running' if running else 'stopped'} · {panels} panel(s)"
    return line + (f" · {waiting} approval(s) waiting" if waiting else "")


def waiting_line(requests: Sequence[int]) -> str:
    """A pane's mark while its panel waits for approvals."""
    listed = ", ".join(str(r) for r in requests)
    return f"WAITING for approval (request {listed})"


def host_running(events: Sequence[ev.HostEvent], was: bool) -> bool:
    """Whether the host runs after these events, given whether it ran before them."""
    for event in events:
        if isinstance(event, ev.HostStarted | ev.HostReady):
            was = True
        elif isinstance(event, ev.HostStopped):
            was = False
    return was


def grid_columns(panels: int) -> int:
    """Columns of the pane grid: as square as it gets (1, 2, 2, 2, 3... for 1, 2, 3, 4, 5...)."""
    return max(1, math.ceil(math.sqrt(max(1, min(panels, MAX_PANELS)))))
