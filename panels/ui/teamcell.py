"""`TeamCell`: the team at a glance, in the grid's cell that no pane takes (three panels in a
2x2 grid): approvals waiting and on which panels, the bus's pending messages and dead letters,
and the last alerts.

Attributes down: the app sets `waiting` (the open approvals), `bus_location` (from the host's
meta) and `active` (whether the grid has a cell to spare), and hands it the events
(`show_events`), of which it keeps the last few `AlertRaised`. It follows the bus itself
(busread.py, read-only, as the bus pane does) only while it is shown. Every piece of text is
cleaned (lines.py) and rendered with markup off.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable

from rich.text import Text
from textual.app import ComposeResult
from textual.reactive import reactive
from textual.widgets import Static

from panels.hostdb import HostEvent
from panels.hostdb.catalogue import AlertRaised
from panels.text import clean
from panels.ui.busread import BusFollower, bus_counts
from panels.ui.lines import alert_line, approvals_line, bus_line
from peerbus import BusSnapshot

ALERTS_SHOWN = 5  # the newest alerts kept and shown


class TeamCell(BusFollower):
    """The team's cell of the grid; shown (and reading the bus) while `active`."""

    INTERVAL = 1.0  # seconds between polls of the bus: a glance, not the bus pane's flow

    waiting: reactive[tuple[tuple[str, int], ...]] = reactive((), layout=False)

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.alerts: deque[AlertRaised] = deque(maxlen=ALERTS_SHOWN)

    def compose(self) -> ComposeResult:
        yield Static(Text(approvals_line(())), id="team-approvals")
        yield Static(Text("bus: not read yet"), id="team-bus")
        yield Static(Text("recent alerts"), classes="team-label")
        yield Static(Text("none"), id="team-alerts")

    def on_mount(self) -> None:
        self.border_title = "team"
        self.display = self.active

    def watch_waiting(self, waiting: tuple[tuple[str, int], ...]) -> None:
        self.query_one("#team-approvals", Static).update(Text(approvals_line(waiting)))
        self.set_class(bool(waiting), "waiting")

    def show_events(self, events: Iterable[HostEvent]) -> None:
        """Keep the newest alerts among `events` and show them, newest first."""
        new = [e for e in events if isinstance(e, AlertRaised)]
        if not new:
            return  # nothing to redraw
        self.alerts.extend(new)
        lines = [alert_line(alert) for alert in reversed(self.alerts)]
        self.query_one("#team-alerts", Static).update(Text("\n".join(lines) or "none"))

    # -- the bus, while shown ----------------------------------------------------------------

    def show_bus(self, snapshot: BusSnapshot) -> None:
        counts = bus_counts(snapshot)
        self.say_bus(bus_line(counts.pending, counts.dead))

    def say_bus(self, text: str) -> None:
        self.query_one("#team-bus", Static).update(Text(clean(text, 400)))
