"""`DashboardApp`: the grid of panel panes over one host.sqlite, and `make_app` to build it.

The app wires collaborators and delegates: a worker follows the file (tail.py) and hands
each pane its status row and events (a long catch-up in slices, so keys and paints go on);
the header and the bus pane (buspane.py) get theirs too. Open approvals (approvals.py) mark
their panes and, one at a time, open the answer modal (modals.py); F2..F10 act on the focused
pane. What the operator types, picks in the palette or opens as a screen is operator.py's.
Read-only viewers show everything and send nothing. Quitting closes the viewer only; a host
run by another process goes on.
"""

from __future__ import annotations

import asyncio
import gc
from collections import defaultdict
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack, suppress
from pathlib import Path
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Grid
from textual.css.query import NoMatches
from textual.widgets import Footer, Static
from textual.worker import Worker, WorkerError

from panels.hostdb import HostEvent, PanelRow
from panels.hostdb.verbs import (
    AnswerRequest,
    Halt,
    Pause,
    Resume,
    Stop,
)
from panels.procfs import pid_alive
from panels.team import recorded_bus
from panels.text import clean
from panels.ui.alerts import AlertRinger
from panels.ui.approvals import ApprovalQueue, Question
from panels.ui.buspane import BusPane
from panels.ui.commands import Sender, open_sender
from panels.ui.lines import (
    MAX_PANELS,
    BusActivity,
    grid_columns,
    header_line,
    host_running,
    spare_cells,
)
from panels.ui.modals import (
    ApprovalScreen,
    HaltScreen,
)
from panels.ui.operator import OperatorApp
from panels.ui.pane import PanelPane
from panels.ui.panelfiles import latest_replay
from panels.ui.tail import Changes, Tail, open_tail
from panels.ui.teamcell import TeamCell
from panels.unconfined import META_KEY, warning
from runtime.policy.asking import Answer

CHUNK = 200  # events a pane takes before the app lets other work run (a long catch-up)
REPLAY_RECHECK = 30.0  # seconds between looks at the panels' last memory replay


class DashboardApp(OperatorApp):
    """Every panel of one host, side by side. `read_only` shows and never sends."""

    CSS_PATH = Path(__file__).with_name("dashboard.tcss")  # absolute: subclasses find it too
    TITLE = "mnemara"
    COMMAND_PALETTE_BINDING = "f1"  # ctrl+p moves between panes
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+n", "cycle(1)", "Next pane"),
        Binding("ctrl+p", "cycle(-1)", "Previous pane"),
        # ctrl+z is undo in the composer; ctrl+f ("full") zooms.
        Binding("ctrl+f", "zoom", "Zoom"),
        # Function keys: the composer types every printable key, and ctrl+h is backspace.
        Binding("f2", "verb('pause')", "Pause"),
        Binding("f3", "verb('resume')", "Resume"),
        Binding("f4", "verb('stop')", "Stop turn"),
        Binding("f5", "halt", "Halt"),
        # The composer (a TextArea) takes f6/f7 to select a line / everything: f6 is the
        # app's before the composer's (priority), and f7 is left alone.
        Binding("f6", "bus", "Bus", priority=True),
        Binding("f8", "context", "Context"),
        Binding("f9", "role_doc", "Role doc"),
        Binding("f10", "halt_record", "Why halted"),
        Binding("q", "quit", "Quit"),
    ]

    def __init__(
        self, hostdb_path: Path, *, read_only: bool = False, stops_team: bool = False
    ) -> None:
        super().__init__()
        self.hostdb_path = hostdb_path
        self.read_only = read_only
        self.stops_team = stops_team
        self.panes: dict[str, PanelPane] = {}
        self.meta: dict[str, str] = {}
        self.replay: str | None = None  # the header's last memory replay (read with the meta)
        self.bus_activity = BusActivity()
        self.running = False
        self.sent: list[int] = []  # ids of the commands this viewer queued
        self.zoomed: str | None = None
        self.approvals = ApprovalQueue()
        self.ringer = AlertRinger()  # rings on the host's alerts (alerts.py)
        self.asking: ApprovalScreen | None = None  # the answer modal shown, if any
        self._answered: set[int] = set()  # requests answered here, not yet closed by the host
        self._resources = AsyncExitStack()
        self._sender: Sender | None = None
        self._tail_worker: Worker[None] | None = None

    def compose(self) -> ComposeResult:
        yield Static(Text("connecting…"), id="header")
        yield Static(Text(""), id="unconfined")  # shown while tools run unconfined
        yield Grid(TeamCell(id="team"), id="grid")  # the panes go before the team cell
        yield BusPane(read_only=self.read_only, id="bus")
        yield Static(Text(""), id="notice")
        yield Footer()

    async def on_mount(self) -> None:
        # The app owns the connections, not the worker: Textual cancels workers at exit
        # without waiting for them, and an aiosqlite connection must be closed (awaited) before
        # the event loop ends, or its thread answers into a closed loop.
        tail = await self._resources.enter_async_context(open_tail(self.hostdb_path))
        if not self.read_only:  # a read-only viewer never opens the file for writing
            self._sender = await self._resources.enter_async_context(open_sender(self.hostdb_path))
        self._tail_worker = self.run_worker(
            self._follow(tail), name="tail", group="tail", exclusive=True, exit_on_error=True
        )
        # A replay is run from the shell, rarely: a look every half minute is enough.
        self.set_interval(REPLAY_RECHECK, self._read_replay)

    async def _read_replay(self) -> None:
        replay = await asyncio.to_thread(latest_replay, self.meta)
        if replay != self.replay:
            self.replay = replay
            self._show_header()

    async def on_unmount(self) -> None:
        worker = self._tail_worker
        if worker is not None:
            # Wait until the worker is gone: a query it had in flight must not meet a closed
            # connection, nor its answer a closed loop.
            worker.cancel()
            with suppress(WorkerError):
                await worker.wait()
        await self._resources.aclose()

    async def _follow(self, tail: Tail) -> None:
        frozen = False
        async for changes in tail.follow():
            if not self.is_running:
                return  # shutting down: the screens are going, nothing left to show on
            try:
                await self.apply(changes)
            except NoMatches:
                if self.is_running:
                    raise
                return  # the app began to close while these changes were being shown
            if not frozen and self.panes:
                # What exists once the panes are up (Textual, the styles, the widgets) lives
                # as long as the app: kept out of the collector's full passes, which otherwise
                # walk it all and stall the screen for tens of milliseconds while panels stream.
                gc.freeze()
                frozen = True

    async def apply(self, changes: Changes) -> None:
        """Show what a poll of the file found."""
        if changes.meta is not None:
            self.meta = changes.meta
            await self._read_replay()
            pid = self.meta.get("pid", "")
            self.running = pid.isdigit() and pid_alive(int(pid))
            bus = recorded_bus(self.meta) or None
            self.main.query_one(BusPane).bus_location = bus
            self.main.query_one(TeamCell).bus_location = bus
        if changes.panels is not None:
            await self._show_panels(changes.panels)
        if changes.meta is not None or changes.panels is not None:
            self._show_unconfined()
        self.running = host_running([logged.event for logged in changes.events], self.running)
        by_panel: dict[str, list[HostEvent]] = defaultdict(list)
        for logged in changes.events:
            if logged.event.panel is not None:
                by_panel[logged.event.panel].append(logged.event)
        for name, events in by_panel.items():
            pane = self.panes.get(name)
            if pane is None:
                continue
            for start in range(0, len(events), CHUNK):
                pane.show_events(events[start : start + CHUNK])
                if len(events) > CHUNK:  # a long catch-up: let keys and paints in between
                    await asyncio.sleep(0)
        self.approvals.take(logged.event for logged in changes.events)
        self.ringer.take(self, changes.events, team=self.meta.get("team", ""))
        self.bus_activity = self.bus_activity.plus(logged.event for logged in changes.events)
        self.main.query_one(BusPane).show_events([logged.event for logged in changes.events])
        self.main.query_one(TeamCell).show_events(logged.event for logged in changes.events)
        self._show_approvals()
        self._show_header()

    async def _show_panels(self, rows: list[PanelRow]) -> None:
        grid = self.main.query_one("#grid", Grid)
        for row in rows:
            pane = self.panes.get(row.name)
            if pane is None:
                if len(self.panes) >= MAX_PANELS:
                    self._notice(f"more than {MAX_PANELS} panels: not all are shown")
                    continue
                pane = PanelPane(row.name, read_only=self.read_only)
                await grid.mount(pane, before=grid.query_one(TeamCell))
                self.panes[row.name] = pane  # once mounted: what the app reaches in it is there
                if len(self.panes) == 1:
                    pane.focus_target()
            pane.status = row
        self._layout()

    def _show_unconfined(self) -> None:
        """The warning line under the header while any panel's tools run unconfined: why,
        and what to do (the host's note, unconfined.py); hidden otherwise."""
        rows = [p.status for p in self.panes.values() if p.status is not None]
        said = warning(self.meta.get(META_KEY, ""), rows)
        line = self.main.query_one("#unconfined", Static)
        line.update(Text(f"warning: {clean(said, 400)}" if said is not None else ""))
        line.set_class(said is not None, "shown")

    def _layout(self) -> None:
        grid = self.main.query_one("#grid", Grid)
        zoomed = self.zoomed is not None
        columns = grid_columns(len(self.panes))
        grid.styles.grid_size_columns = 1 if zoomed else columns
        grid.set_class(zoomed, "zoomed")
        # The cells the panes leave in their last row show the team (three panels in 2x2).
        spare = spare_cells(len(self.panes), columns)
        team = grid.query_one(TeamCell)
        team.styles.column_span = max(1, spare)
        team.active = spare > 0 and not zoomed
        for name, pane in self.panes.items():
            pane.set_class(name == self.zoomed, "zoomed")

    def _show_approvals(self) -> None:
        """Mark the waiting panes; close the modal of a question closed elsewhere; open the
        next question's modal when none is shown (never on a read-only viewer)."""
        for name, pane in self.panes.items():
            pane.waiting = tuple(q.request for q in self.approvals.waiting(name))
        waiting = self.approvals.waiting()
        self.main.query_one(TeamCell).waiting = tuple((q.panel, q.request) for q in waiting)
        self._answered.intersection_update(q.request for q in self.approvals.waiting())
        if self.asking is not None and not self.approvals.is_open(self.asking.question.request):
            if self.screen is self.asking:
                self.asking.dismiss(None)
            self.asking = None
        if self.asking is not None or self.read_only or len(self.screen_stack) > 1:
            return  # one modal at a time; the halt modal, when open, goes first
        question = self.approvals.next(skip=self._answered)
        if question is not None:
            self.asking = ApprovalScreen(question, waiting=len(self.approvals.waiting()))
            self.push_screen(self.asking, self._answer_callback(question))

    def _answer_callback(self, question: Question) -> Callable[[str | None], Awaitable[None]]:
        async def answered(answer: str | None) -> None:
            if self.asking is not None and self.asking.question == question:
                self.asking = None
            if answer is not None:
                self._answered.add(question.request)
                await self._send(AnswerRequest(panel=question.panel, request=question.request,
                                               answer=Answer(answer)))  # fmt: skip
            self._show_approvals()
            self._show_header()

        return answered

    def _show_header(self) -> None:
        rows = [p.status for p in self.panes.values() if p.status is not None]
        text = header_line(self.meta, running=self.running, panels=len(self.panes),
                           waiting=len(self.approvals.waiting()), rows=rows,
                           bus=self.bus_activity, replay=self.replay)  # fmt: skip
        self.main.query_one("#header", Static).update(Text(text))

    def action_cycle(self, step: int) -> None:
        panes = [p for p in self.panes.values() if self.zoomed is None]
        if not panes:
            return
        current = self.focused_pane()
        index = panes.index(current) if current in panes else -step
        panes[(index + step) % len(panes)].focus_target()

    def action_zoom(self) -> None:
        pane = self.focused_pane()
        self.zoomed = None if self.zoomed is not None or pane is None else pane.panel
        self._layout()
        if pane is not None:
            pane.focus_target()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in {"verb", "halt"}:
            return not self.read_only  # hidden from the footer and never run
        return True

    async def action_verb(self, name: str) -> None:
        pane = self.focused_pane()
        verbs: dict[str, type[Pause | Resume | Stop]] = {"pause": Pause, "resume": Resume,
                                                          "stop": Stop}  # fmt: skip
        if pane is not None and name in verbs:
            await self._send(verbs[name](panel=pane.panel))

    def action_halt(self) -> None:
        pane = self.focused_pane()
        if pane is None or self.read_only:
            return
        panel = pane.panel

        async def halt(reason: str | None) -> None:
            if reason is not None:
                await self._send(Halt(panel=panel, reason=reason))
            self._show_approvals()  # a question that came while the halt modal was open

        self.push_screen(HaltScreen(panel), halt)

    def action_context(self) -> None:
        pane = self.focused_pane()
        if pane is not None:
            self.open_context(pane.panel)

    def action_role_doc(self) -> None:
        pane = self.focused_pane()
        if pane is not None:
            self.open_role_doc(pane.panel)

    def action_bus(self) -> None:
        """Show or hide the bus pane (it reads the bus only while shown)."""
        bus = self.main.query_one(BusPane)
        bus.active = not bus.active
        if bus.active:
            bus.focus_dead()

    async def on_bus_pane_retry_asked(self, message: BusPane.RetryAsked) -> None:
        await self._send(message.verb)


def make_app(
    hostdb_path: Path, *, read_only: bool = False, stops_team: bool = False
) -> DashboardApp:
    """The dashboard over the host database at `hostdb_path` (the CLI's and the tests' way);
    `stops_team` when the host runs in this process and quitting stops it."""
    return DashboardApp(hostdb_path, read_only=read_only, stops_team=stops_team)
