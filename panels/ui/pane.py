"""`PanelPane`: one panel's view: its name, its status line, its transcript, its composer.

Attributes down: the app gives the pane its status row (`status`) and its events
(`show_events`). Messages up: the operator's text leaves as `PanelPane.InputGiven`; the app
turns it into a verb. Everything untrusted is rendered as plain `Text` (never markup), after
`lines.transcript_lines` cleaned it.
"""

from __future__ import annotations

from collections.abc import Iterable

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.message import Message
from textual.reactive import reactive
from textual.widgets import RichLog, Static

from panels.host.account import clean
from panels.hostdb import HostEvent, PanelRow
from panels.ui.composer import Composer
from panels.ui.lines import status_line, transcript_lines, waiting_line

MAX_LINES = 2_000  # transcript lines a pane keeps


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

    def compose(self) -> ComposeResult:
        yield Static(Text(clean(self.panel, 40)), classes="pane-title")
        yield Static(Text(status_line(None)), classes="pane-status")
        log = RichLog(classes="pane-transcript", markup=False, highlight=False, wrap=True,
                      max_lines=MAX_LINES, min_width=20)  # fmt: skip
        log.can_focus = False  # focus moves between composers (or panes, read-only)
        yield log
        if not self.read_only:
            yield Composer(id=f"composer-{_ident(self.panel)}")

    @property
    def transcript(self) -> RichLog:
        return self.query_one(".pane-transcript", RichLog)

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

    def watch_status(self, row: PanelRow | None) -> None:
        if self.is_mounted:
            line = status_line(row)
            if self.waiting:
                line = f"{waiting_line(self.waiting)} · {line}"
            self.query_one(".pane-status", Static).update(Text(line))
            self.set_class(row is not None and row.state == "halted", "halted")
            self.set_class(bool(self.waiting), "waiting")

    def watch_waiting(self) -> None:
        self.watch_status(self.status)

    def on_mount(self) -> None:
        self.watch_status(self.status)

    def show_events(self, events: Iterable[HostEvent]) -> None:
        """Append the lines of this panel's events to the transcript."""
        log = self.transcript
        for event in events:
            for line in transcript_lines(event):
                log.write(Text(line))

    def on_composer_submitted(self, message: Composer.Submitted) -> None:
        message.stop()
        self.post_message(self.InputGiven(self.panel, message.text))


def _ident(name: str) -> str:
    """A widget id for a panel name (names may hold characters ids may not)."""
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in name)
