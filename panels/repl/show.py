"""How the REPL shows what a panel does: the host's live events as the REPL's lines.

`EventView` gets every event the host emits for the panel, text deltas as they stream, and
writes them in the REPL's look: `assistant: ...` for text, `> tool: Name(...)` and
`  result: ...` for tool calls, `[warning]`, `[window trimmed ...]`, the halt notice with
`/resume`, `[stopped]` and `[error] ...`. Events that are the face's own business (model,
inbox, settled, state) are not shown. Untrusted text goes through `safe`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from panels.repl.terminal import Terminal, safe


def preview(text: object, limit: int = 300) -> str:
    flat = " ".join(safe(str(text)).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def halt_notice(data: Mapping[str, Any]) -> str:
    """`HaltRecord.notice()` from a `halt` event's data."""
    tag = "[BUDGET HALT]" if data.get("source") == "budget" else "[SENTINEL HALT]"
    return f"{tag} {data.get('rule')}: {data.get('message')}"


class EventView:
    def __init__(self, terminal: Terminal, name: str, *, stream: bool = True) -> None:
        self.terminal = terminal
        self.name = name
        self.stream = stream
        self.buffered: list[str] = []
        self.failed_turn = False  # the life that ran it fails next: that is not news
        self._in_text = False
        self._said = 0

    def _line(self, text: str) -> None:
        self._in_text = False
        self.terminal.say(text)

    def _text(self, piece: str) -> None:
        """Streamed text, labelled with the panel's name when it starts or was cut."""
        terminal = self.terminal
        if not self._in_text or terminal.said != self._said:
            terminal.write(("" if terminal.at_line_start else "\n") + f"{self.name}: ")
        terminal.write(safe(piece))
        self._in_text, self._said = True, terminal.said

    def show(self, kind: str, data: Mapping[str, Any]) -> None:
        if kind == "text_delta":
            piece = str(data.get("text", ""))
            if self.stream:
                self._text(piece)
            else:
                self.buffered.append(piece)
        elif kind == "tool_call":
            tool = safe(str(data.get("tool", "")))
            self._line(f"> tool: {tool}({preview(data.get('input'), 160)})")
        elif kind == "tool_result":
            flag = "error" if data.get("error") else "result"
            self._line(f"  {flag}: {preview(data.get('content', ''))}")
        elif kind == "warning":
            self._line(f"[warning] {safe(str(data.get('message', '')))}")
        elif kind == "trimmed":
            forced = data.get("forced") or ()
            more = f", {len(forced)} pinned forced" if forced else ""
            self._line(f"[window trimmed: {len(data.get('evicted') or ())} rows{more}]")
        elif kind == "halt":
            self._line(f"{safe(halt_notice(data))}\n/resume lets it go on.")
        elif kind == "delivery" and any(s != "operator" for s in data.get("senders") or ()):
            senders = ", ".join(str(s) for s in data.get("senders") or ())
            self._line(f"[turn {data.get('turn')}: message(s) {data.get('ids')} from {senders}]")
        elif kind == "send":
            self._line(f"> sent to {data.get('to')}: {preview(data.get('text', ''), 160)}")
        elif kind == "approval_answer" and str(data.get("answer", "")).startswith("timed out"):
            self._line(f"[question {data.get('request')} timed out: the call was refused]")
        elif kind == "turn_ended":
            self._turn_ended(data)
        elif kind == "panel_failed":
            if not self.failed_turn:
                self._line(f"[error] the panel failed: {safe(str(data.get('error', '')))}")
        elif kind == "panel_given_up":
            self._line(f"[error] the panel was given up: {safe(str(data.get('reason', '')))}")
        elif kind == "panel_started":
            self.failed_turn = False

    def _turn_ended(self, data: Mapping[str, Any]) -> None:
        if self.buffered:
            self._text("".join(self.buffered))
            self.buffered.clear()
        outcome = data.get("outcome")
        if outcome == "stopped":
            self._line("[stopped]")
        elif outcome == "failed":
            self.failed_turn = True
            self._line(f"[error] {safe(str(data.get('error') or 'the turn failed'))}")
        elif not self.terminal.at_line_start:
            self.terminal.write("\n")
        self._in_text = False
