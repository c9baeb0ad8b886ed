"""What a pane's transcript shows for each event, as plain strings with a kind. Pure.

Text from models, peers and tools is untrusted. The transcript keeps its lines whole (a reply
is the model's own layout), so `visible` does not fold it onto one line as `clean` does: it
turns tabs into spaces and writes every other control character (ESC, carriage returns,
the bidirectional overrides) as a visible escape such as `\\x1b`, so it can neither steer the
terminal nor hide text. The widget renders the result with markup off.

Streamed text arrives as several `Said` events per reply (the host coalesces the model's
deltas every quarter second): `Stream` pieces continue the open line. A tool call is one
line; its result is folded into that line when it arrives (`Fold`), not written below it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from panels.hostdb import catalogue as ev
from panels.text import clean
from runtime.policy.display import escape_command_for_display

Kind = Literal["text", "tool", "note", "alert", "operator"]

RESULT_WIDTH = 120  # characters of a tool result shown in its call's line
_ESCAPED = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def visible(text: str) -> str:
    """`text` with tabs as spaces and other control characters written as escapes."""
    return _ESCAPED.sub(_escape, text.replace("\t", "    "))


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


@dataclass(frozen=True)
class Line:
    """A whole line; `key` names a tool call whose result may fold into it later."""

    text: str
    kind: Kind = "note"
    key: str | None = None


@dataclass(frozen=True)
class Stream:
    """Streamed reply text: continues the open text line; newlines start new ones."""

    text: str


@dataclass(frozen=True)
class Fold:
    """A tool result: appended to the line of call `key`, or a line of its own when that line
    is gone (trimmed)."""

    key: str
    text: str
    error: bool


Entry = Line | Stream | Fold


def _tool(name: str) -> str:
    return clean(name.removeprefix("mcp__mnemara__"), 60)


def result_summary(content: str, *, error: bool) -> str:
    """A result in a few words: its first non-empty line and how many more there are."""
    lines = [line for line in content.splitlines() if line.strip()]
    first = clean(lines[0], RESULT_WIDTH) if lines else "(empty)"
    more = f" (+{len(lines) - 1} lines)" if len(lines) > 1 else ""
    return f"{'✗ error' if error else '← result'}: {first}{more}"


def entries(event: ev.HostEvent) -> list[Entry]:
    """The transcript entries for one of a panel's events (none for the kinds the status line
    covers, such as state changes)."""
    match event:
        case ev.Said():
            return [Stream(visible(event.text))]
        case ev.ToolCalled():
            return [Line(f"→ {_tool(event.tool)} {clean(event.input, 160)}", "tool", event.id)]
        case ev.ToolAnswered():
            return [Fold(event.id, result_summary(event.content, error=event.error), event.error)]
        case ev.VerbApplied(verb="input" | "nudge", ok=True):
            return [Line(f"{clean(event.by, 40)} > {visible(event.text)}", "operator")]
        case ev.VerbApplied():
            refused = "" if event.ok else "REFUSED: "
            args = f" ({clean(event.summary, 80)})" if event.summary else ""
            return [Line(f"· {clean(event.by, 40)} {clean(event.verb, 20)}{args}: {refused}"
                         + clean(event.outcome), "note" if event.ok else "alert")]  # fmt: skip
        case ev.Delivered():
            senders = ", ".join(clean(s, 40) for s in event.senders) or "nobody"
            return [Line(f"· turn {event.turn} takes {len(event.ids)} message(s) from {senders}")]
        case ev.TurnEnded():
            error = f": {clean(event.error)}" if event.error else ""
            return [Line(f"· turn {event.turn} {clean(event.outcome, 20)}{error} "
                         f"({event.tool_calls} tool call(s), {event.input_tokens} in / "
                         f"{event.output_tokens} out, ${event.usd:.4f})",
                         "alert" if event.error else "note")]  # fmt: skip
        case ev.Halted():
            return [Line(f"! HALTED by {clean(event.by, 40)}: {clean(event.rule, 60)}: "
                         + clean(event.message), "alert")]  # fmt: skip
        case ev.Resumed():
            return [Line(f"· resumed by {clean(event.by, 40)}")]
        case ev.MessageSent():
            return [Line(f"→ message to {clean(event.to, 40)}: {clean(event.text)}", "tool")]
        case ev.ApprovalAsked():
            return [Line(f"? asks (request {event.request}): {_tool(event.tool)} "
                         + clean(escape_command_for_display(event.target)), "alert")]  # fmt: skip
        case ev.ApprovalAnswered():
            return [Line(f"· approval {event.request}: {clean(event.answer, 40)}")]
        case ev.PanelStarted():
            return [Line(f"· started (epoch {event.epoch}, model {clean(event.model, 60)})")]
        case ev.PanelFailed():
            return [Line(f"! failed: {clean(event.error)}", "alert")]
        case ev.PanelGivenUp():
            return [Line(f"! given up: {clean(event.reason)}", "alert")]
        case ev.Warned():
            return [Line(f"! warning: {clean(event.message)}", "alert")]
        case ev.DeadLettered():
            return [Line(f"! dead letter: message {event.id}: {clean(event.reason)}", "alert")]
        case ev.UnknownEvent():
            return [Line(f"? {clean(event.stored_kind, 40)} (not readable here: "
                         f"{clean(event.why)})")]  # fmt: skip
    return []
