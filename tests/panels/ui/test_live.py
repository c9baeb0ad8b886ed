"""The dashboard against a real host running in another thread: it sees only host.sqlite."""

from __future__ import annotations

import json
from typing import Any

import pytest

from panels.hostdb import connect, read_panels, submit_command
from panels.hostdb.verbs import Input
from panels.ui.app import make_app
from panels.ui.composer import Composer
from runtime.turn.driver import TurnRequest
from tests.panels.host.conftest import reply
from tests.panels.ui.conftest import transcript, until

pytestmark = pytest.mark.anyio
SIZE = (200, 50)


def echo(request: TurnRequest) -> list[Any]:
    return reply(f"echo: {request.blocks[-1]['text']}")


def commands(path: Any) -> list[tuple[Any, ...]]:
    conn = connect(path, create=False)
    try:
        return conn.execute("SELECT panel, verb, args, by FROM commands ORDER BY id").fetchall()
    finally:
        conn.close()


async def test_panes_come_in_the_team_files_order(live_host: Any) -> None:
    host = live_host(zeta=[], alpha=[], mid=[])  # the team file lists them in this order
    app = make_app(host.hostdb_path, read_only=True)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: len(app.panes) == 3)
        assert list(app.panes) == ["zeta", "alpha", "mid"]
    conn = connect(host.hostdb_path, create=False)
    try:
        assert [r.name for r in read_panels(conn)] == ["zeta", "alpha", "mid"]  # `ps` too
    finally:
        conn.close()


async def test_panes_show_each_panel_name_and_state(live_host: Any) -> None:
    host = live_host(a=[], b=[])
    app = make_app(host.hostdb_path)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: set(app.panes) == {"a", "b"})
        await until(pilot, lambda: all(p.status and p.status.state for p in app.panes.values()))
        for name, pane in app.panes.items():
            title = pane.query_one(".pane-title").render()
            assert str(title) == name
            status = str(pane.query_one(".pane-status").render())
            assert pane.status is not None and status.startswith(pane.status.state)
            assert "inbox 0" in status and "turns 0" in status
        await until(pilot, lambda: "host running" in str(app.query_one("#header").render()))
        assert "team t" in str(app.query_one("#header").render())
        assert "2 panel(s)" in str(app.query_one("#header").render())
        await until(pilot, lambda: app.query_one("#grid").styles.grid_size_columns == 2)


async def test_a_reply_appears_in_its_own_pane_only(live_host: Any) -> None:
    host = live_host(a=[reply("alpha says hi")], b=[])
    app = make_app(host.hostdb_path)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: set(app.panes) == {"a", "b"})
        conn = connect(host.hostdb_path, create=False)
        submit_command(conn, Input(panel="a", text="hello a"))
        conn.close()
        await until(pilot, lambda: "alpha says hi" in transcript(app, "a"))
        await until(pilot, lambda: "turn 1 done" in transcript(app, "a"))
        assert "operator > hello a" in transcript(app, "a")
        assert "alpha says hi" not in transcript(app, "b")
        assert "hello a" not in transcript(app, "b")
        await until(pilot, lambda: app.panes["a"].status is not None
                    and app.panes["a"].status.turns == 1)  # fmt: skip


async def test_ctrl_s_sends_the_composer_text_as_an_input_verb(live_host: Any) -> None:
    host = live_host(a=[], b=[echo])
    app = make_app(host.hostdb_path)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: set(app.panes) == {"a", "b"})
        composer = app.panes["b"].composer
        assert composer is not None
        composer.focus()
        await pilot.press(*"two", "enter", *"lines")
        assert composer.text == "two\nlines"  # enter is a newline, not a send
        assert commands(host.hostdb_path) == []
        await pilot.press("ctrl+s")
        await until(pilot, lambda: "echo: two" in transcript(app, "b"))
        assert composer.text == ""
        assert commands(host.hostdb_path) == [
            ("b", "input", json.dumps({"text": "two\nlines"}), "operator")
        ]
        assert len(app.sent) == 1
        assert "echo" not in transcript(app, "a")
        assert host.drivers["b"].requests[0].blocks[-1]["text"] == "two\nlines"


async def test_read_only_has_no_input_and_sends_nothing(live_host: Any) -> None:
    host = live_host(a=[])
    app = make_app(host.hostdb_path, read_only=True)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: set(app.panes) == {"a"})
        assert list(app.query(Composer)) == []
        assert app.panes["a"].composer is None
        app.action_cycle(1)
        await pilot.press(*"hello", "ctrl+s")
        app.panes["a"].post_message(app.panes["a"].InputGiven("a", "sneaky"))
        await pilot.pause()
        assert app.is_running  # "q" was not typed; the app still runs
    assert commands(host.hostdb_path) == []
    assert app.sent == []


async def test_hostile_text_is_shown_literally(live_host: Any) -> None:
    hostile = "[bold]x[/bold] \x1b[31mred\x1b[0m \x1b]0;title\x07 [link=http://e]y[/link]"
    host = live_host(a=[reply(hostile)])
    app = make_app(host.hostdb_path)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: "a" in app.panes)
        conn = connect(host.hostdb_path, create=False)
        submit_command(conn, Input(panel="a", text="[red]operator[/red]"))
        conn.close()
        await until(pilot, lambda: "turn 1 done" in transcript(app, "a"))
        shown = transcript(app, "a")
        escaped = r"[bold]x[/bold] \x1b[31mred\x1b[0m \x1b]0;title\x07 [link=http://e]y[/link]"
        assert escaped in shown
        assert "operator > [red]operator[/red]" in shown
        assert "\x1b" not in shown and "\x07" not in shown
        log = app.panes["a"].transcript
        rows = [log.render_line(y) for y in range(log.size.height)]
        hostile_row = next(strip for strip in rows if "[bold]x" in strip.text)
        assert hostile_row.text.startswith(escaped[:20])  # literal on screen, not markup
        styled = [seg for seg in hostile_row if seg.style and (seg.style.bold or seg.style.link)]
        assert styled == []
