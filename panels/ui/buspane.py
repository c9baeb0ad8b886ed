"""`BusPane`: the team's message flow (sender → recipient, type, status, attempts) and its
dead letters, with a retry.

Attributes down: the app gives the pane the bus (`bus_location`, from the host's meta) and
the events that answer a retry (`show_events`). Messages up: selecting a dead letter and
pressing `r` (or the button) posts `BusPane.RetryAsked`; the app sends the `retry` verb and
the host applies it. The pane reads the bus itself through peerbus's viewer API
(`follow_bus` in busread.py, read-only), only while it is shown. Names, topics and reasons
come from peers: cleaned and rendered with markup off.
"""

from __future__ import annotations

from contextlib import suppress
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.reactive import reactive
from textual.widgets import Button, DataTable, Static
from textual.worker import Worker, WorkerError

from panels.hostdb import HostEvent
from panels.hostdb.catalogue import VerbApplied
from panels.hostdb.verbs import Retry
from panels.text import clean
from panels.ui.busread import bus_counts, follow_bus
from peerbus import BusSnapshot, Flow

INTERVAL = 0.25  # seconds between polls of the bus file while the pane is shown


def _cell(value: object, limit: int = 40) -> Text:
    return Text(clean(value, limit))


class BusPane(Vertical):
    """The bus view. `read_only` panes offer no retry."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("r", "retry", "Retry dead letter")]

    bus_location: reactive[str | None] = reactive(None, layout=False)
    active: reactive[bool] = reactive(False)  # shown, and reading the bus

    class RetryAsked(Message):
        """The operator asked for a dead letter to be retried: `verb` is for the host."""

        def __init__(self, ident: int) -> None:
            super().__init__()
            self.verb = Retry(id=ident)

    def __init__(self, *, read_only: bool = False, id: str | None = None) -> None:
        super().__init__(id=id)
        self.read_only = read_only
        self.snapshot = BusSnapshot()
        self._worker: Worker[None] | None = None

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

    # -- reading, while shown ----------------------------------------------------------------

    async def watch_bus_location(self) -> None:
        await self._stop()  # another host life may name another file
        self._follow()

    async def watch_active(self, active: bool) -> None:
        self.display = active
        if active:
            self._follow()
        else:
            await self._stop()

    def _follow(self) -> None:
        if self.bus_location is None or not self.active or self._worker is not None:
            return
        self._worker = self.run_worker(
            self._read(self.bus_location), name="bus", exit_on_error=False
        )

    async def _stop(self) -> None:
        worker, self._worker = self._worker, None
        if worker is not None:
            # Wait until it is gone: its connection closes in its own `finally`, on this loop.
            worker.cancel()
            with suppress(WorkerError):
                await worker.wait()

    async def on_unmount(self) -> None:
        await self._stop()

    async def _read(self, location: str) -> None:
        await follow_bus(location, show=self.show, say=self._say, interval=INTERVAL,
                         retry_hint="press f6 twice to try again")  # fmt: skip
        self._worker = None  # the bus could not be read: f6 twice follows it again

    # -- showing ---------------------------------------------------------------------------------

    def show(self, snapshot: BusSnapshot) -> None:
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
                self._say(f"retry ({clean(event.summary, 40)}): {refused}{clean(event.outcome)}")

    def _say(self, text: str) -> None:
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
            self._say("no dead letter chosen: pick one in the list below, then press r")
            return
        self._say(f"retry of message {item.id} asked; waiting for the host")
        self.post_message(self.RetryAsked(item.id))

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "bus-retry":
            event.stop()
            self.action_retry()
