"""What the dashboard looks like in its canonical states, as SVG snapshots.

Each state is a host.sqlite written by hand (the real schema, no host running, so nothing
moves), opened by the real app at a fixed size. A changed look fails here until a person has
looked at it and accepted it: `pytest tests/panels/ui/test_snapshots.py --snapshot-update`,
then read the SVGs under __snapshots__/ before committing them. On a failure the plugin
writes a report (snapshot_report.html) showing the old and the new screen side by side.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import anyio
import pytest
from textual.pilot import Pilot
from textual.widgets import DataTable

from panels.hostdb import HostEvent, PanelRow, connect, set_meta
from panels.hostdb import catalogue as ev
from panels.ui.app import DashboardApp, make_app
from panels.ui.buspane import BusPane
from panels.ui.context import ContextScreen
from panels.ui.teamcell import TeamCell
from peerbus import open_bus
from runtime.instance.config import InstanceConfig, save_config
from runtime.store import TurnStore
from runtime.window.rows import NewRow, Role
from tests.panels.ui.conftest import write_host_db

Compare = Callable[..., bool]
SIZE = (160, 45)
READY_WITHIN = 60.0

REPLY = {
    "producer": "Two tasks. The engineer starts with the counter itself.\nTask 1 is with the "
    "engineer; I wait for the report.",
    "engineer": "Writing wordcount.py now: it reads the file named on its command line, "
    "splits on whitespace and prints the count.",
    "watchdog": "Digest read: producer idle, engineer on task 1 with 3 tool calls. Nothing "
    "to flag.",
}


def row(name: str, state: str = "idle", **fields: Any) -> PanelRow:
    base: dict[str, Any] = dict(kind="worker", state=state, turns=3, input_tokens=12_400,
                                output_tokens=830, usd=0.0412, epoch=1, inbox=True,
                                model="claude-sonnet-4-5")  # fmt: skip
    return PanelRow(name=name, **(base | fields))


def streaming(name: str) -> list[HostEvent]:
    text = REPLY.get(name, f"{name} works on its part.")
    half = len(text) // 2
    return [
        ev.PanelStarted(
            panel=name, epoch=1, instance=f"trio-{name}", model="claude-sonnet-4-5", created=False
        ),
        ev.VerbApplied(
            panel=name,
            id=1,
            verb="input",
            by="operator",
            ok=True,
            outcome="queued",
            text=f"Status, {name}?",
            summary="",
        ),
        ev.Delivered(panel=name, turn=3, ids=(7,), senders=("operator",)),
        ev.ToolCalled(panel=name, id="t1", tool="Bash", input="python3 wordcount.py wordcount.py"),
        ev.ToolAnswered(panel=name, id="t1", error=False, content="42\n"),
        ev.Said(panel=name, text=text[:half]),
        ev.Said(panel=name, text=text[half:]),
    ]


def open_app(tmp_path: Path, rows: Sequence[PanelRow], events: Sequence[HostEvent],
             **options: Any) -> DashboardApp:  # fmt: skip
    path = tmp_path / "host.sqlite"
    write_host_db(path, rows, events, team="trio")
    return make_app(path, **options)


async def until(pilot: Pilot[Any], ready: Callable[[], object], what: str) -> None:
    """Pause until `ready()` holds, then let the screen settle. The deadline only catches a
    screen that never gets there (a machine with both cores busy is slow, not wrong): the
    picture is taken of the state asked for, never of whatever a fixed pause found."""
    deadline = time.monotonic() + READY_WITHIN
    while not ready():
        if time.monotonic() > deadline:
            pytest.fail(f"the dashboard did not {what} within {READY_WITHIN:.0f} s")
        await pilot.pause(0.02)
    await pilot.pause(0.2)


def widths_settled(table: DataTable[Any]) -> bool:
    """Has the table sized its columns to its cells? It does so on an idle moment after the
    rows arrive, which a busy machine can put after the picture."""
    for index, column in enumerate(table.ordered_columns):
        cells = [len(str(cell)) for cell in table.get_column_at(index)]
        if column.content_width < max(cells, default=0):
            return False
    return True


def shown(count: int) -> Callable[[Pilot[Any]], Any]:
    """Wait until the app shows `count` panes and their events, then let it settle."""

    async def wait(pilot: Pilot[Any]) -> None:
        app = pilot.app
        assert isinstance(app, DashboardApp)

        def ready() -> bool:
            return len(app.panes) == count and all(p.status for p in app.panes.values())

        await until(pilot, ready, f"show {count} pane(s) with their status")
        app.set_focus(None)  # no cursor blinking in the picture

    return wait


TRIO = ("producer", "engineer", "watchdog")


def test_three_panes_streaming(snap_compare: Compare, tmp_path: Path) -> None:
    events = [e for name in TRIO for e in streaming(name)]
    rows = [row("producer", kind="producer"), row("engineer", "running", detail="turn 3"),
            row("watchdog", kind="watchdog", model="claude-haiku-4-5")]  # fmt: skip
    assert snap_compare(open_app(tmp_path, rows, events), terminal_size=SIZE,
                        run_before=shown(3))  # fmt: skip


def test_an_approval_queue(snap_compare: Compare, tmp_path: Path) -> None:
    asks = [
        ev.ApprovalAsked(panel="engineer", request=1, tool="Bash", target="wc -w wordcount.py",
                         reason="not among the allowed commands", always_offered=True,
                         remember=("wc -w *",), timeout=60.0),
        ev.ApprovalAsked(panel="producer", request=2, tool="Write", target="/srv/notes/plan.md",
                         reason="outside the work directory", always_offered=False, remember=(),
                         timeout=60.0),
    ]  # fmt: skip
    rows = [row("producer", "waiting"), row("engineer", "waiting"), row("watchdog")]
    events = [e for name in TRIO for e in streaming(name)] + asks
    assert snap_compare(open_app(tmp_path, rows, events), terminal_size=SIZE,
                        run_before=shown(3))  # fmt: skip


def halted_events() -> list[HostEvent]:
    calls = [e for i in range(8) for e in (
        ev.ToolCalled(panel="engineer", id=f"c{i}", tool="Bash", input=f"echo step {i}"),
        ev.ToolAnswered(panel="engineer", id=f"c{i}", error=False, content=f"step {i}"),
    )]  # fmt: skip
    return [
        *streaming("producer"),
        *streaming("engineer"),
        *calls,
        ev.Halted(panel="engineer", by="watchdog", source="watchdog", rule="runaway",
                  message="8 tool calls in turn 4, the same command each time", turn=4),
    ]  # fmt: skip


def test_a_halted_panel(snap_compare: Compare, tmp_path: Path) -> None:
    rows = [row("producer"), row("engineer", "halted", detail="runaway"), row("watchdog")]
    assert snap_compare(open_app(tmp_path, rows, halted_events(), read_only=True),
                        terminal_size=SIZE, run_before=shown(3))  # fmt: skip


def test_the_halt_record(snap_compare: Compare, tmp_path: Path) -> None:
    rows = [row("producer"), row("engineer", "halted", detail="runaway"), row("watchdog")]
    app = open_app(tmp_path, rows, halted_events())

    async def record(pilot: Pilot[Any]) -> None:
        await shown(3)(pilot)
        engineer = app.panes["engineer"]
        await until(pilot, lambda: engineer.halt is not None, "read the engineer's halt")
        app.open_halt_record("engineer")
        await pilot.pause(0.2)

    assert snap_compare(app, terminal_size=SIZE, run_before=record)


def test_sixteen_panes(snap_compare: Compare, tmp_path: Path) -> None:
    names = [f"panel-{i:02d}" for i in range(16)]
    rows = [row(n, "running" if i % 3 == 0 else "idle") for i, n in enumerate(names)]
    events = [e for n in names for e in streaming(n)]
    assert snap_compare(open_app(tmp_path, rows, events, read_only=True), terminal_size=(200, 60),
                        run_before=shown(16))  # fmt: skip


def test_a_zoomed_pane(snap_compare: Compare, tmp_path: Path) -> None:
    rows = [row("producer"), row("engineer", "running"), row("watchdog")]
    app = open_app(tmp_path, rows, [e for name in TRIO for e in streaming(name)])

    async def zoom(pilot: Pilot[Any]) -> None:
        await shown(3)(pilot)
        app.panes["engineer"].focus_target()
        # The focus moves on the next message loop turn: zooming before it zoomed nothing.
        await until(pilot, lambda: app.focused_pane() is app.panes["engineer"], "focus")
        app.action_zoom()
        await pilot.pause(0.2)
        app.set_focus(None)

    assert snap_compare(app, terminal_size=SIZE, run_before=zoom)


def test_the_help_page(snap_compare: Compare, tmp_path: Path) -> None:
    app = open_app(tmp_path, [row("producer")], streaming("producer"))

    async def help_page(pilot: Pilot[Any]) -> None:
        await shown(1)(pilot)
        await app.slash("producer", "/help")
        await pilot.pause(0.2)

    assert snap_compare(app, terminal_size=SIZE, run_before=help_page)


@pytest.fixture
def fixed_dir() -> Iterator[Path]:
    """A directory whose path is the same on every run (the context viewer names its file)."""
    path = Path(tempfile.gettempdir()) / "mnemara-snapshot"
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir()
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_the_context_viewer(snap_compare: Compare, tmp_path: Path, fixed_dir: Path) -> None:
    root = fixed_dir / "trio-engineer"
    root.mkdir()
    save_config(root / "config.json", InstanceConfig(max_window_tokens=200_000))
    texts: list[tuple[Role, str]] = [
        ("user", "Task 1: write wordcount.py."),
        ("assistant", "Writing wordcount.py."),
        ("user", "task-1 passes. Task 2: add --top N."),
        ("assistant", "Working on --top."),
    ]
    with TurnStore.open(root / "turns.sqlite", clock=lambda: "2026-12-01T00:00:00Z") as store:
        ids = store.append([NewRow(role, ({"type": "text", "text": text},), 40 + 10 * i)
                            for i, (role, text) in enumerate(texts)])  # fmt: skip
        store.set_pinned(ids[0], True)
        store.upsert_slot("plan", "user", "1. counter  2. --top N")
    app = open_app(tmp_path, [row("engineer")], streaming("engineer"), read_only=True)
    conn = connect(tmp_path / "host.sqlite", create=False)
    set_meta(conn, {"instance:engineer": str(root), "role:engineer": ""})
    conn.close()

    async def context(pilot: Pilot[Any]) -> None:
        await shown(1)(pilot)
        app.open_context("engineer")

        def loaded() -> bool:
            screen = app.screen
            if not isinstance(screen, ContextScreen) or screen.state is None:
                return False
            return all(widths_settled(t) for t in screen.query(DataTable))

        await until(pilot, loaded, "read the engineer's store into the context viewer")
        # A header drawn before that idle moment can stay in the table's line cache at its
        # old width; showing the header again clears the cache, and the picture is redrawn.
        for table in app.screen.query(DataTable):
            table.show_header = False
            table.show_header = True
        await pilot.pause(0.2)

    assert snap_compare(app, terminal_size=SIZE, run_before=context)


def test_the_bus_pane_with_a_dead_letter(snap_compare: Compare, tmp_path: Path) -> None:
    bus_path = tmp_path / "bus.sqlite"

    async def traffic() -> None:
        async with open_bus(bus_path) as bus:
            done = await bus.submit("producer", "engineer", {"text": "Task 1"}, topic="task-1")
            await bus.submit("engineer", "producer", {"text": "task-1 done"}, topic="task-1")
            claim = await bus.claim("engineer")
            await bus.ack(claim, only=[done])
            await bus.submit("producer", "engineer", {"text": "Task 2"}, topic="task-2")
            claim = await bus.claim("engineer")
            await bus.fail(claim, reason="the turn failed five times: model service broke")

    anyio.run(traffic)
    rows = [row("producer", kind="producer"), row("engineer", dead_letters=1), row("watchdog")]
    app = open_app(tmp_path, rows, [e for name in TRIO for e in streaming(name)])
    conn = connect(tmp_path / "host.sqlite", create=False)
    set_meta(conn, {"bus": str(bus_path)})
    conn.close()

    async def bus_pane(pilot: Pilot[Any]) -> None:
        await shown(3)(pilot)
        app.action_bus()
        pane = app.main.query_one(BusPane)
        await until(pilot, lambda: pane.snapshot.dead, "read the bus and its dead letter")
        app.set_focus(None)

    assert snap_compare(app, terminal_size=SIZE, run_before=bus_pane)


def alert(panel: str | None, kind: str, text: str) -> ev.AlertRaised:
    return ev.AlertRaised(panel=panel, alert=kind, text=text, cause=1)


def open_team(tmp_path: Path, *, asking: bool) -> DashboardApp:
    """The demo's three panels mid-story, the team cell beside them: the engineer was asked
    about `wc` (still waiting, when `asking`; answered otherwise), the alerts said so, and the
    bus holds one pending message and one dead letter."""
    bus_path = tmp_path / "bus.sqlite"

    async def traffic() -> None:
        async with open_bus(bus_path) as bus:
            await bus.submit("producer", "engineer", {"text": "Task 1"}, topic="task-1")
            await bus.submit("producer", "watchdog", {"text": "Audit"}, topic="audit")
            claim = await bus.claim("watchdog")
            await bus.fail(claim, reason="the turn failed five times: model service broke")

    anyio.run(traffic)
    rows = [row("producer", kind="producer"),
            row("engineer", "waiting" if asking else "running", detail="turn 3"),
            row("watchdog", kind="watchdog", model="claude-haiku-4-5", dead_letters=1)]  # fmt: skip
    ask = ev.ApprovalAsked(panel="engineer", request=1, tool="Bash", target="wc -w wordcount.py",
                           reason="not among the allowed commands", always_offered=True,
                           remember=("wc -w *",), timeout=60.0)  # fmt: skip
    answered = [] if asking else [ev.ApprovalAnswered(panel="engineer", request=1, answer="yes")]
    events = [e for name in TRIO for e in streaming(name)] + [
        ask,
        alert("watchdog", "failed", "watchdog gave up a message: see the bus pane (f6)"),
        alert("engineer", "approval", "engineer waits for your answer (request 1)"),
        *answered,
    ]
    app = open_app(tmp_path, rows, events)
    conn = connect(tmp_path / "host.sqlite", create=False)
    set_meta(conn, {"bus": str(bus_path)})
    conn.close()
    return app


async def team_shown(pilot: Pilot[Any]) -> None:
    """The three panes, and the team cell with the bus read."""
    app = pilot.app
    assert isinstance(app, DashboardApp)
    await shown(3)(pilot)
    team = app.main.query_one(TeamCell)
    await until(pilot, lambda: "pending" in str(team.query_one("#team-bus").render()),
                "read the bus into the team cell")  # fmt: skip
    app.set_focus(None)


@pytest.mark.parametrize(
    "size", [(80, 24), (120, 40), (200, 50)], ids=["80x24", "120x40", "200x50"]
)
def test_the_demo_at_any_size(snap_compare: Compare, tmp_path: Path, size: tuple[int, int]) -> None:
    assert snap_compare(open_team(tmp_path, asking=False), terminal_size=size,
                        run_before=team_shown)  # fmt: skip


def test_the_approval_modal_at_80x24(snap_compare: Compare, tmp_path: Path) -> None:
    app = open_team(tmp_path, asking=True)

    async def asked(pilot: Pilot[Any]) -> None:
        await team_shown(pilot)
        await until(pilot, lambda: app.asking is not None and app.screen is app.asking,
                    "open the approval modal")  # fmt: skip

    assert snap_compare(app, terminal_size=(80, 24), run_before=asked)
