"""The bus pane over a real host's bus: the flow between two panels, a dead letter made for
real (a panel whose turns fail on a message past the bus's limit), retried with `r` from the
pane and taken by the panel; a read-only viewer's `r` does nothing."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import DataTable, Static

from panels.host import RestartPolicy
from panels.host.delivery.poison import POISON_ATTEMPTS
from panels.hostdb import connect, submit_command
from panels.hostdb.verbs import Input
from panels.ui.app import DashboardApp, make_app
from panels.ui.buspane import BusPane
from runtime.turn.driver import ErrorEvent, ToolCall
from tests.panels.host.conftest import make_team, panels, reply
from tests.panels.ui.conftest import START, LiveHost, commands, transcript, until

pytestmark = pytest.mark.anyio
SIZE = (200, 50)
SEND = "mcp__mnemara__send_message"
# A failed turn ends the panel's life: the bus's limit of them need room to restart.
PATIENT = RestartPolicy(base_delay=0.01, max_delay=0.02, max_failures=20, window=60)


@pytest.fixture
def poisoned(tmp_path: Path) -> Iterator[LiveHost]:
    """A host where b, told by the operator, sends a message to a, whose turns on it fail
    POISON_ATTEMPTS times: the bus gives it up (a dead letter); a's next turn would do fine."""
    boom = [ErrorEvent("other", "the model service broke")]
    scripts: dict[str, Sequence[Any]] = {
        "a": [boom] * POISON_ATTEMPTS + [reply("fine at last")],
        "b": [reply("passing it on", ToolCall("c1", SEND, {"to": "a", "text": "poison"}))],
    }
    host = LiveHost(make_team(tmp_path, panels("a", "b")), scripts, policy=PATIENT)
    host.start()
    conn = connect(host.hostdb_path, create=False)
    try:
        submit_command(conn, Input(panel="b", text="tell a"))
    finally:
        conn.close()
    yield host
    host.stop()


def bus_pane(app: DashboardApp) -> BusPane:
    return app.main.query_one(BusPane)


def flow(app: DashboardApp) -> list[tuple[str, ...]]:
    """(from, to, type, status, tries) of every line of the flow table."""
    table = bus_pane(app).query_one("#bus-flow", DataTable)
    rows = [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]
    return [(r[1], r[2], r[3], r[5], r[6]) for r in rows]


def dead(app: DashboardApp) -> list[tuple[str, ...]]:
    table = bus_pane(app).query_one("#bus-dead", DataTable)
    rows = [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]
    return [(r[0], r[1], r[2], r[5]) for r in rows]


def header(app: DashboardApp) -> str:
    return str(app.main.query_one("#header", Static).render())


async def test_a_dead_letter_is_listed_and_retried_from_the_pane(poisoned: LiveHost) -> None:
    app = make_app(poisoned.hostdb_path)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: set(app.panes) == {"a", "b"})
        await pilot.press("f6")
        pane = bus_pane(app)
        assert pane.display and pane.active
        await until(pilot, lambda: len(dead(app)) == 1, within=START)
        ((ident, sender, recipient, reason),) = dead(app)
        assert (sender, recipient) == ("b", "a") and "the model service broke" in reason
        assert ("b", "a", "message", "dead", str(POISON_ATTEMPTS)) in flow(app)
        assert ("operator", "b@operator", "input", "acked", "1") in flow(app)
        await until(pilot, lambda: "1 dead" in header(app))
        assert "bus 1 sent" in header(app)
        assert "1 dead" in str(app.panes["a"].query_one(".pane-status").render())
        # The dead-letter list has the focus; its one row is under the cursor.
        await pilot.press("r")
        await until(pilot, lambda: "fine at last" in transcript(app, "a"))
        await until(
            pilot, lambda: ("b", "a", "message", "acked", str(POISON_ATTEMPTS + 1)) in flow(app)
        )
        await until(pilot, lambda: dead(app) == [])
        notice = str(pane.query_one("#bus-notice", Static).render())
        assert f"message {ident} is back in the queue" in notice
        await until(pilot, lambda: "0 dead" in header(app))
    assert ("retry", f'{{"id": {ident}}}', "done") in commands(poisoned.hostdb_path)


async def test_a_read_only_viewer_cannot_retry(poisoned: LiveHost) -> None:
    app = make_app(poisoned.hostdb_path, read_only=True)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: set(app.panes) == {"a", "b"})
        await pilot.press("f6")
        await until(pilot, lambda: len(dead(app)) == 1, within=START)
        assert not bus_pane(app).query("#bus-retry")  # no retry button either
        await pilot.press("r")
        await pilot.pause()
        assert len(dead(app)) == 1
        assert "retry" not in str(bus_pane(app).query_one("#bus-notice", Static).render())
    assert [verb for verb, _, _ in commands(poisoned.hostdb_path)] == ["input"]
