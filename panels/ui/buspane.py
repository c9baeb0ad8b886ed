"""`BusPane`: the team's message flow (sender → recipient, type, status, attempts) and its
dead letters, with a retry.

Attributes down: the app gives the pane the bus (`bus_location`, from the host's meta) and
the events that answer a retry (`show_events`). Messages up: selecting a dead letter and
pressing `r` (or the button) posts `BusPane.RetryAsked`; the app sends the `retry` verb and
the host applies it. The pane reads the bus itself through peerbus's viewer API
(a `BusFollower`, busread.py: read-only), only while it is shown. Names, topics and reasons
come from peers: cleaned and rendered with markup off.
"""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.message import Message
from textual.widgets import Button, DataTable, Static

from panels.hostdb import HostEvent
from panels.hostdb.catalogue import VerbApplied
from panels.hostdb.verbs import Retry
from panels.text import clean
from panels.ui.busread import BusFollower, bus_counts
from peerbus import BusSnapshot, Flow


def _cell(value: object, limit: int = 40) -> Text:
    return Text(clean(value, limit))


class BusPane(BusFollower):
    """The bus view. `read_only` panes offer no retry."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("r", "retry", "Retry dead letter")]

    INTERVAL = 0.25  # seconds between polls of the bus file while the pane is shown
    RETRY_HINT = "press f6 twice to try again"

    class RetryAsked(Message):
        """The operator asked for a dead letter to be retried: `verb` is for the host."""

        def __init__(self, ident: int) -> None:
            super().__init__()
            self.verb = Retry(id=ident)

    def __init__(self, *, read_only: bool = False, id: str | None = None) -> None:
        super().__init__(id=id)
        self.read_only = read_only
        self.snapshot = BusSnapshot()

    def compose(self) -> ComposeResult:
        yield Static(Text("bus: not read yet"), id="bus-summary")
        flow: DataTable[Text] = DataTable(id="bus-flow", cursor_type="row", zebra_stripes=True)
        flow.add_columns("id", "from", "→ to", "type", "topic", "status", "tries")
        yield flow
        with Horizontal(id="bus-dead-bar"):
            yield Static(Text("dead letters"), id="bus-dead-title")
            if not self.read_only:
                yield Button("Retry (r)", id="bus-retry", compact=True)
        dead: DataTable[Text] = DataTable(id="bus-dead", cursor_type="row")
        dead.add_columns("id", "from", "→ to", "type", "tries", "reason")
        yield dead
        yield Static(Text(""), id="bus-notice")

    # -- showing ---------------------------------------------------------------------------------

    def show_bus(self, snapshot: BusSnapshot) -> None:
        """Fill both tables, keeping the cursors where they were (on the same dead letter, when
        it is still there)."""
        self.snapshot = snapshot
        flow = self.query_one("#bus-flow", DataTable)
        at = flow.cursor_row
        flow.clear()
        for item in snapshot.flow:
            flow.add_row(_cell(item.id), _cell(item.sender), _cell(item.recipient),
                         _cell(item.kind, 30), _cell(item.topic, 30), _cell(item.status),
                         _cell(item.attempts))  # fmt: skip
        if 0 < at < len(snapshot.flow):
            flow.move_cursor(row=at)  # where the operator left it (new rows come on top)
        dead = self.query_one("#bus-dead", DataTable)
        chosen = self.chosen()
        dead.clear()
        for item in snapshot.dead:
            dead.add_row(_cell(item.id), _cell(item.sender), _cell(item.recipient),
                         _cell(item.kind, 30), _cell(item.attempts), _cell(item.reason, 200),
                         key=f"{item.id}:{item.recipient}")  # fmt: skip
        if chosen is not None:
            for row, item in enumerate(snapshot.dead):
                if (item.id, item.recipient) == (chosen.id, chosen.recipient):
                    dead.move_cursor(row=row)
        counts = bus_counts(snapshot)
        shown = ", ".join(f"{n} {status}" for status, n in counts.by_status) or "none"
        title = self.query_one("#bus-summary", Static)
        title.update(Text(f"bus: newest {counts.shown} deliveries ({shown}); "
                          f"{counts.dead} dead letter(s)"))  # fmt: skip

    def show_events(self, events: list[HostEvent]) -> None:
        """The host's answers to retries (from any viewer)."""
        for event in events:
            if isinstance(event, VerbApplied) and event.verb == "retry":
                refused = "" if event.ok else "REFUSED: "
                self.say_bus(f"retry ({clean(event.summary, 40)}): {refused}{clean(event.outcome)}")

    def say_bus(self, text: str) -> None:
        self.query_one("#bus-notice", Static).update(Text(text))

    def chosen(self) -> Flow | None:
        """The dead letter under the cursor, if any."""
        dead = self.query_one("#bus-dead", DataTable)
        row = dead.cursor_row
        if not self.snapshot.dead or not 0 <= row < len(self.snapshot.dead):
            return None
        return self.snapshot.dead[row]

    # -- retry -------------------------------------------------------------------------------------

    def focus_dead(self) -> None:
        self.query_one("#bus-dead", DataTable).focus()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "retry":
            return not self.read_only  # hidden from the footer and never run
        return True

    def action_retry(self) -> None:
        item = self.chosen()
        if self.read_only:
            return
        if item is None:
            self.say_bus("no dead letter chosen: pick one in the list below, then press r")
            return
        self.say_bus(f"retry of message {item.id} asked; waiting for the host")
        self.post_message(self.RetryAsked(item.id))

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "bus-retry":
            event.stop()
            self.action_retry()
