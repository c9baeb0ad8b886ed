"""F2..F5 on the focused pane reach the host as verbs; a read-only viewer sends none."""

from __future__ import annotations

from typing import Any

import pytest

from panels.hostdb import connect
from panels.ui.app import make_app
from panels.ui.modals import HaltScreen
from tests.panels.ui.conftest import transcript, until

pytestmark = pytest.mark.anyio
SIZE = (200, 50)


def state(app: Any, panel: str) -> str | None:
    pane = app.panes.get(panel)
    row = None if pane is None else pane.status
    return None if row is None else row.state


def verbs(path: Any) -> list[tuple[Any, ...]]:
    conn = connect(path, create=False)
    try:
        return conn.execute("SELECT panel, verb, args FROM commands ORDER BY id").fetchall()
    finally:
        conn.close()


async def test_pause_resume_stop_and_halt_keys_reach_the_host(live_host: Any) -> None:
    host = live_host(a=[], b=[])
    app = make_app(host.hostdb_path)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: set(app.panes) == {"a", "b"} and state(app, "b") == "idle")
        app.panes["b"].focus_target()
        await pilot.press(*"typed", "f2")
        await until(pilot, lambda: state(app, "b") == "paused")
        assert app.panes["b"].composer is not None
        assert app.panes["b"].composer.text == "typed"  # f2 is no text
        await until(pilot, lambda: "operator pause" in transcript(app, "b"))
        await pilot.press("f3")
        await until(pilot, lambda: state(app, "b") == "idle")
        await pilot.press("f4")
        await until(pilot, lambda: "operator stop" in transcript(app, "b"))
        await pilot.press("f5")
        await until(pilot, lambda: isinstance(app.screen, HaltScreen))
        await pilot.press("escape")  # cancelled: nothing sent
        await until(pilot, lambda: not isinstance(app.screen, HaltScreen))
        await pilot.press("f5")
        await until(pilot, lambda: isinstance(app.screen, HaltScreen))
        await pilot.press(*"too fast", "enter")
        await until(pilot, lambda: state(app, "b") == "halted")
        assert app.panes["b"].has_class("halted")
        await until(pilot, lambda: "HALTED by operator" in transcript(app, "b"))
        assert state(app, "a") == "idle"
    assert [(p, v) for p, v, _ in verbs(host.hostdb_path)] == [
        ("b", "pause"),
        ("b", "resume"),
        ("b", "stop"),
        ("b", "halt"),
    ]
    assert verbs(host.hostdb_path)[-1][2] == '{"reason": "too fast"}'


async def test_read_only_keys_send_nothing(live_host: Any) -> None:
    host = live_host(a=[])
    app = make_app(host.hostdb_path, read_only=True)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: "a" in app.panes)
        app.action_cycle(1)
        await pilot.press("f2", "f3", "f4", "f5")
        await pilot.pause()
        assert not isinstance(app.screen, HaltScreen)
    assert verbs(host.hostdb_path) == []
