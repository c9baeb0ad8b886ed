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
from contextlib import suppress

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.reactive import reactive
from textual.widgets import Static
from textual.worker import Worker, WorkerError

from panels.hostdb import HostEvent
from panels.hostdb.catalogue import AlertRaised
from panels.text import clean
from panels.ui.busread import bus_counts, follow_bus
from panels.ui.lines import alert_line, approvals_line, bus_line
from peerbus import BusSnapshot

ALERTS_SHOWN = 5  # the newest alerts kept and shown
INTERVAL = 1.0  # seconds between polls of the bus: a glance, not the bus pane's flow


class TeamCell(Vertical):
    """The team's cell of the grid; shown (and reading the bus) while `active`."""

    waiting: reactive[tuple[tuple[str, int], ...]] = reactive((), layout=False)
    bus_location: reactive[str | None] = reactive(None, layout=False)
    active: reactive[bool] = reactive(False)

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.alerts: deque[AlertRaised] = deque(maxlen=ALERTS_SHOWN)
        self._worker: Worker[None] | None = None

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
        self._say(bus_line(counts.pending, counts.dead))

    def _say(self, text: str) -> None:
        self.query_one("#team-bus", Static).update(Text(clean(text, 400)))

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
        self._worker = self.run_worker(self._read(self.bus_location), name="team-bus",
                                       exit_on_error=False)  # fmt: skip

    async def _read(self, location: str) -> None:
        await follow_bus(location, show=self.show_bus, say=self._say, interval=INTERVAL)
        self._worker = None  # could not be read: shown again later, it tries again

    async def _stop(self) -> None:
        worker, self._worker = self._worker, None
        if worker is not None:
            # Wait until it is gone: its connection closes in its own `finally`, on this loop.
            worker.cancel()
            with suppress(WorkerError):
                await worker.wait()

    async def on_unmount(self) -> None:
        await self._stop()
