"""The dashboard at 80x24, measured (the snapshots show it; these hold it to numbers): every
pane keeps at least five transcript rows, a composer grows only while focused, the spare grid
cell shows the team, and each modal's controls are on screen, clickable."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Button, Input, Static

from panels.hostdb import catalogue as ev
from panels.ui.app import DashboardApp
from panels.ui.modals import ApprovalScreen, HaltRecordScreen, HaltScreen
from panels.ui.teamcell import TeamCell
from tests.panels.ui.test_snapshots import open_team, team_shown, until

pytestmark = pytest.mark.anyio
SMALL = (80, 24)
ROWS = 5  # transcript rows every pane keeps at 80x24


def rows(app: DashboardApp) -> dict[str, int]:
    return {name: pane.transcript.region.height for name, pane in app.panes.items()}


def screen_of(app: DashboardApp) -> Screen[Any]:
    return app.screen  # (a call: mypy keeps no narrowing of `app.screen` across it)


def text(widget: Widget) -> str:
    return str(widget.render())


def reachable(pilot: Pilot[Any], widget: Widget) -> bool:
    """Is `widget` on screen, whole, and the one a click on it reaches (not clipped away or
    covered)?"""
    region = widget.region
    screen = pilot.app.screen
    if not region or not screen.region.contains_region(region):
        return False
    found, _ = screen.get_widget_at(region.x + region.width // 2, region.y + region.height // 2)
    return found is widget or widget in found.ancestors


@pytest.fixture
def answered(tmp_path: Path) -> DashboardApp:
    """The demo's three panels, the approval answered (the state is written outside the
    test's event loop: the bus is made with a loop of its own)."""
    return open_team(tmp_path, asking=False)


@pytest.fixture
def asking(tmp_path: Path) -> DashboardApp:
    """The same, the engineer still waiting for its answer."""
    return open_team(tmp_path, asking=True)


async def test_every_pane_keeps_five_rows_and_the_composer_grows_only_with_its_text(
    answered: DashboardApp,
) -> None:
    app = answered
    async with app.run_test(size=SMALL) as pilot:
        await team_shown(pilot)
        assert all(n >= ROWS for n in rows(app).values()), rows(app)
        engineer = app.panes["engineer"]
        composer = engineer.composer
        assert composer is not None and composer.region.height == 1
        engineer.focus_target()
        await until(pilot, lambda: composer.has_focus, "focus the engineer's composer")
        await pilot.pause(0.1)
        # Focused and empty it still takes one row: the focused pane keeps its five too.
        assert composer.region.height == 1
        assert all(n >= ROWS for n in rows(app).values()), rows(app)
        composer.insert("two\nlines")
        await until(pilot, lambda: composer.region.height == 2, "grow with the text")
        # A long text grows it to half the pane at most, inside the pane's border.
        composer.insert("".join(f"line {i}\n" for i in range(12)))
        await pilot.pause(0.1)
        assert 3 <= composer.region.height <= engineer.content_region.height // 2
        assert engineer.content_region.contains_region(composer.region)
        assert engineer.transcript.region.height >= 3
        await pilot.press("escape")  # clears it
        app.set_focus(None)
        await until(pilot, lambda: composer.region.height == 1, "shrink the composer back")
        assert all(n >= ROWS for n in rows(app).values()), rows(app)
        # The grid's fourth cell shows the team: approvals, bus counts, newest alert first.
        team = app.main.query_one(TeamCell)
        assert team.display and team.region.height >= ROWS
        assert text(team.query_one("#team-approvals")) == "no approval waiting"
        assert text(team.query_one("#team-bus")) == "bus: 1 pending · 1 dead letter(s)"
        alerts = text(team.query_one("#team-alerts", Static)).splitlines()
        assert alerts[0].startswith("approval · engineer · ")
        assert alerts[1].startswith("failed · watchdog · ")


async def test_every_modal_keeps_its_controls_on_screen(asking: DashboardApp) -> None:
    app = asking
    async with app.run_test(size=SMALL) as pilot:
        await until(pilot, lambda: app.asking is not None and app.screen is app.asking,
                    "open the approval modal")  # fmt: skip
        team = app.main.query_one(TeamCell)
        assert text(team.query_one("#team-approvals")) == "1 approval(s) waiting: engineer (1)"
        buttons = list(app.screen.query(Button))
        assert [str(b.label) for b in buttons] == ["yes (y)", "no (n)", "session (s)",
                                                   "always (a)"]  # fmt: skip
        assert all(reachable(pilot, b) for b in buttons), [b.region for b in buttons]
        await pilot.press("escape")  # not an answer: the question stays
        assert isinstance(app.screen, ApprovalScreen) and app.asking is not None
        # A halt's record with a long history before it, and the halt modal's one line.
        halt = ev.Halted(panel="engineer", by="watchdog", source="watchdog", rule="runaway",
                         message="the same command 40 times " * 20, turn=4)  # fmt: skip
        before = [f"→ Bash echo step {i}" for i in range(40)]
        app.push_screen(HaltRecordScreen("engineer", halt, before, read_only=False))
        await until(pilot, lambda: isinstance(app.screen, HaltRecordScreen), "open the record")
        buttons = list(screen_of(app).query(Button))
        assert len(buttons) == 2 and all(reachable(pilot, b) for b in buttons)
        app.push_screen(HaltScreen("engineer"))
        await until(pilot, lambda: isinstance(app.screen, HaltScreen), "ask for a reason")
        assert reachable(pilot, screen_of(app).query_one(Input))
