"""`PanelPane`: one panel's view: its name, its status line, its transcript, its composer,
and on its border whether its tools run in the sandbox.

Attributes down: the app gives the pane its status row (`status`) and its events
(`show_events`). Messages up: the operator's text leaves as `PanelPane.InputGiven`; the app
turns it into a verb (or, for a slash command, into what panels/ui/slash.py says). The
transcript shows the entries of panels/ui/entries.py, which escaped every untrusted piece;
nothing is ever rendered as markup.
"""

from __future__ import annotations

from collections.abc import Iterable

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.message import Message
from textual.reactive import reactive
from textual.widgets import Static

from panels.hostdb import HostEvent, PanelRow
from panels.hostdb.catalogue import Halted, Resumed
from panels.hostdb.status import TOOLS_SANDBOXED, TOOLS_UNCONFINED
from panels.text import clean
from panels.ui.composer import Composer
from panels.ui.entries import Entry, entries
from panels.ui.lines import status_line, waiting_line
from panels.ui.transcript import Transcript
from panels.unconfined import badge

HALT_CONTEXT = 8  # transcript lines kept from just before a halt, for its record


class PanelPane(Vertical):
    """The view of one panel. `read_only` panes have no composer."""

    status: reactive[PanelRow | None] = reactive(None, layout=False)
    waiting: reactive[tuple[int, ...]] = reactive((), layout=False)  # open approval requests

    class InputGiven(Message):
        """The operator wrote `text` for the pane's panel."""

        def __init__(self, panel: str, text: str) -> None:
            super().__init__()
            self.panel = panel
            self.text = text

    def __init__(self, panel: str, *, read_only: bool = False) -> None:
        super().__init__(classes="pane")
        self.panel = panel
        self.read_only = read_only
        self.can_focus = read_only  # otherwise focus goes to the composer
        self.halt: Halted | None = None  # the latest halt seen, until a resume
        self.halt_before: list[str] = []

    def compose(self) -> ComposeResult:
        yield Static(Text(clean(self.panel, 40)), classes="pane-title")
        yield Static(Text(status_line(None)), classes="pane-status")
        yield Transcript(classes="pane-transcript")
        if not self.read_only:
            yield Composer(id=f"composer-{_ident(self.panel)}")

    @property
    def transcript(self) -> Transcript:
        return self.query_one(Transcript)

    @property
    def composer(self) -> Composer | None:
        found = self.query(Composer)
        return found.first() if found else None

    def focus_target(self) -> None:
        """Give this pane the focus (its composer's, when it has one)."""
        composer = self.composer
        if composer is not None:
            composer.focus()
        else:
            self.focus()

    def on_click(self) -> None:
        """A click anywhere in the pane (its transcript too) focuses it, as ctrl+n would."""
        self.focus_target()

    def watch_status(self, row: PanelRow | None) -> None:
        if self.is_mounted:
            line = status_line(row)
            if self.waiting:
                line = f"{waiting_line(self.waiting)} · {line}"
            self.query_one(".pane-status", Static).update(Text(line))
            label = "" if row is None or row.label in ("", self.panel) else row.label
            title = f"{self.panel} · {label}" if label else self.panel  # /name sets a label
            self.query_one(".pane-title", Static).update(Text(clean(title, 84)))
            self.set_class(row is not None and row.state == "halted", "halted")
            self.set_class(bool(self.waiting), "waiting")
            # A badge on the border: UNCONFINED (its tools run with the user's full rights;
            # the app's warning line says why) or a quiet "sandboxed".
            self.border_title = badge(row) or None
            tools = "" if row is None else row.sandbox
            self.set_class(tools == TOOLS_UNCONFINED, "unconfined")
            self.set_class(tools == TOOLS_SANDBOXED, "sandboxed")

    def watch_waiting(self) -> None:
        self.watch_status(self.status)

    def on_mount(self) -> None:
        self.watch_status(self.status)

    def show_events(self, events: Iterable[HostEvent]) -> None:
        """Add this panel's events to the transcript; keep its latest halt and what came
        just before it (the halt record screen shows them)."""
        batch: list[Entry] = []
        for event in events:
            if isinstance(event, Halted):
                self.transcript.add(batch)
                batch = []
                self.halt = event
                self.halt_before = self.transcript.last_lines(HALT_CONTEXT)
            elif isinstance(event, Resumed):
                self.halt = None
            batch.extend(entries(event))
        self.transcript.add(batch)

    def on_composer_submitted(self, message: Composer.Submitted) -> None:
        message.stop()
        self.post_message(self.InputGiven(self.panel, message.text))


def _ident(name: str) -> str:
    """A widget id for a panel name (names may hold characters ids may not)."""
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in name)
