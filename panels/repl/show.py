"""How the REPL shows what a panel does: the host's live events as the REPL's lines.

`EventView` gets every event of the catalogue the host emits for the panel, text deltas as
they stream, and writes them in the REPL's look: `assistant: ...` for text, `> tool: Name(...)`
and `  result: ...` for tool calls, `[warning]`, `[window trimmed ...]`, the halt notice with
`/resume`, `[stopped]` and `[error] ...`. Events that are the face's own business (model,
inbox, settles, states) are not shown. Untrusted text goes through `safe`.
"""

from __future__ import annotations

from panels.hostdb import catalogue as ev
from panels.repl.terminal import Terminal, safe
from runtime.guard.records import halt_tag


def preview(text: object, limit: int = 300) -> str:
    flat = " ".join(safe(str(text)).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def halt_notice(event: ev.Halted) -> str:
    """The halt record's notice, as the transcript shows it."""
    return f"{halt_tag(event.source)} {event.rule}: {event.message}"


class EventView:
    def __init__(self, terminal: Terminal, name: str, *, stream: bool = True) -> None:
        self.terminal = terminal
        self.name = name
        self.stream = stream
        self.buffered: list[str] = []
        self.failed_turn = False  # the life that ran it fails next: that is not news
        self.last_error = ""  # the failure last shown: a give-up that repeats it says the rest
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

    def show(self, event: ev.HostEvent) -> None:
        match event:
            case ev.TextDelta():
                if self.stream:
                    self._text(event.text)
                else:
                    self.buffered.append(event.text)
            case ev.ToolCalled():
                self._line(f"> tool: {safe(event.tool)}({preview(event.input, 160)})")
            case ev.ToolAnswered():
                flag = "error" if event.error else "result"
                self._line(f"  {flag}: {preview(event.content)}")
            case ev.Warned():
                self._line(f"[warning] {safe(event.message)}")
            case ev.WindowTrimmed():
                more = f", {len(event.forced)} pinned forced" if event.forced else ""
                self._line(f"[window trimmed: {len(event.evicted)} rows{more}]")
            case ev.Halted():
                by = "" if event.by in ("sentinel", "budget") else f" (by {safe(event.by)})"
                self._line(f"{safe(halt_notice(event))}{by}\n/resume lets it go on.")
            case ev.ShadowHalt():
                self._line(f"[sentinel, shadow mode: {event.rule}: {safe(event.message)}]")
            case ev.Delivered() if any(s != "operator" for s in event.senders):
                senders = ", ".join(safe(s) for s in event.senders)
                listed = ", ".join(str(i) for i in event.ids)
                self._line(f"[turn {event.turn}: message(s) {listed} from {senders}]")
            case ev.MessageSent():
                self._line(f"> sent to {safe(event.to)}: {preview(event.text, 160)}")
            case ev.ApprovalAnswered() if event.answer.startswith("timed out"):
                self._line(f"[question {event.request} timed out: the call was refused]")
            case ev.TurnEnded():
                self._turn_ended(event)
            case ev.PanelFailed():
                if not self.failed_turn:
                    self._line(f"[error] the panel failed: {safe(event.error)}")
                self.last_error = event.error
            case ev.PanelGivenUp():
                reason = event.reason
                if self.last_error and reason.startswith(self.last_error):
                    reason = reason[len(self.last_error) :].lstrip("; ") or "it failed again"
                self._line(f"[error] the panel was given up: {safe(reason)}")
            case ev.PanelStarted():
                self.failed_turn = False

    def _turn_ended(self, event: ev.TurnEnded) -> None:
        if self.buffered:
            self._text("".join(self.buffered))
            self.buffered.clear()
        if event.outcome == "stopped":
            self._line("[stopped]")
        elif event.outcome == "failed":
            self.failed_turn = True
            self.last_error = event.error or ""
            self._line(f"[error] {safe(event.error or 'the turn failed')}")
        elif not self.terminal.at_line_start:
            self.terminal.write("\n")
        self._in_text = False
