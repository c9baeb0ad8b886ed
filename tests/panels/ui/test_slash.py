"""The original's slash commands typed in a pane, the command palette, the halt record and
the one-line modals: each reaches a real host (scripted drivers) as a typed verb, or opens
what it names; a bad command sends nothing and says why."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from textual.command import CommandPalette

from panels.hostdb import connect, submit_command
from panels.hostdb.verbs import Halt
from panels.ui.app import DashboardApp, make_app
from panels.ui.modals import AskScreen, HaltRecordScreen, TextScreen
from tests.panels.ui.conftest import transcript, until
from tests.panels.ui.test_verb_keys import state, verbs

pytestmark = pytest.mark.anyio
SIZE = (200, 50)


def notice(app: DashboardApp) -> str:
    return str(app.main.query_one("#notice").render())


async def type_line(pilot: Any, app: DashboardApp, panel: str, line: str) -> None:
    """Put `line` in the pane's input (typed key by key when short) and send it."""
    pane = app.panes[panel]
    pane.focus_target()
    if len(line) <= 12:
        await pilot.press(*line)
    else:
        assert pane.composer is not None
        pane.composer.text = line
    await pilot.press("ctrl+s")


async def test_slash_verbs_reach_the_host(live_host: Any) -> None:
    host = live_host(a=[], b=[])
    app = make_app(host.hostdb_path)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: state(app, "a") == "idle" and state(app, "b") == "idle")
        await type_line(pilot, app, "b", "/swap haiku")
        await until(pilot, lambda: "model is claude-haiku-4-5" in transcript(app, "b"))
        await type_line(pilot, app, "b", "/tokens 300k")
        await until(pilot, lambda: "max_window_tokens is 300000" in transcript(app, "b"))
        await type_line(pilot, app, "b", "/inbox")  # a toggle: it was on
        await until(pilot, lambda: app.panes["b"].status is not None
                    and not app.panes["b"].status.inbox)  # fmt: skip
        await type_line(pilot, app, "b", "/inbox on")
        await until(pilot, lambda: "inbox delivery is on" in transcript(app, "b"))
        await type_line(pilot, app, "b", "/name Ada")
        await until(pilot, lambda: "replies show as 'Ada'" in transcript(app, "b"))
        title = app.panes["b"].query_one(".pane-title")
        await until(pilot, lambda: str(title.render()) == "b · Ada")
        await type_line(pilot, app, "b", "/stop")
        await until(pilot, lambda: "no turn runs" in transcript(app, "b"))
        await type_line(pilot, app, "b", "/clear")
        await until(pilot, lambda: "operator clear" in transcript(app, "b"))
        assert "operator" not in transcript(app, "a")
    sent = [(panel, verb, json.loads(args)) for panel, verb, args in verbs(host.hostdb_path)]
    assert sent == [
        ("b", "model", {"model": "claude-haiku-4-5", "save": True}),
        ("b", "tokens", {"max_window_tokens": 300_000, "save": True}),
        ("b", "inbox", {"on": False}),
        ("b", "inbox", {"on": True}),
        ("b", "name", {"label": "Ada"}),
        ("b", "stop", {}),
        ("b", "clear", {"all": False}),
    ]
    configs = {p.parent.name: json.loads(p.read_text()) for p in
               host.team.state_dir.parents[1].glob("*/config.json")}  # fmt: skip
    instance = host.team.panels[1].instance
    assert configs[instance]["display_name"] == "Ada"
    assert configs[instance]["model"] == "claude-haiku-4-5"


async def test_a_bad_command_says_why_and_sends_nothing(live_host: Any) -> None:
    host = live_host(a=[])
    app = make_app(host.hostdb_path)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: state(app, "a") == "idle")
        await type_line(pilot, app, "a", "/frobnicate now")
        await until(pilot, lambda: "unknown command /frobnicate" in notice(app))
        await type_line(pilot, app, "a", "/tokens lots")
        await until(pilot, lambda: "not a token count" in notice(app))
        await type_line(pilot, app, "a", "/models")
        await until(pilot, lambda: "claude-haiku-4-5" in notice(app))
    assert verbs(host.hostdb_path) == []


async def test_help_skeleton_and_quit(live_host: Any, tmp_path: Path) -> None:
    source = tmp_path / "mod.py"
    source.write_text('def count(words: list[str]) -> int:\n    """How many."""\n    return 0\n')
    host = live_host(a=[])
    app = make_app(host.hostdb_path)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: state(app, "a") == "idle")
        await type_line(pilot, app, "a", "/help")
        await until(pilot, lambda: isinstance(app.screen, TextScreen))
        assert isinstance(app.screen, TextScreen)
        assert "/role_doc" in app.screen.text and "ctrl+s" in app.screen.text
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, TextScreen))
        await type_line(pilot, app, "a", f"/skeleton {source}")
        await until(pilot, lambda: isinstance(app.screen, TextScreen))
        assert isinstance(app.screen, TextScreen)
        assert "def count(words: list[str]) -> int" in app.screen.text
        await pilot.press("escape")
        await type_line(pilot, app, "a", f"/skeleton {tmp_path / 'missing.py'}")
        await until(pilot, lambda: "cannot read" in notice(app))
        await type_line(pilot, app, "a", "/quit")
        await until(pilot, lambda: not app.is_running)
    assert verbs(host.hostdb_path) == []


async def test_model_and_token_modals_check_what_is_typed(live_host: Any) -> None:
    host = live_host(a=[])
    app = make_app(host.hostdb_path)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: state(app, "a") == "idle")
        await type_line(pilot, app, "a", "/swap")
        await until(pilot, lambda: isinstance(app.screen, AskScreen))
        await pilot.press("ctrl+a", "ctrl+k", *"no such model!", "enter")
        await pilot.pause()
        assert isinstance(app.screen, AskScreen)  # refused: it stays, saying why
        assert "match pattern" in str(app.screen.query_one(".ask-problem").render())
        await pilot.press("ctrl+a", "ctrl+k", "3", "enter")
        await until(pilot, lambda: "model is claude-haiku-4-5" in transcript(app, "a"))
        await type_line(pilot, app, "a", "/tokens")
        await until(pilot, lambda: isinstance(app.screen, AskScreen))
        await pilot.press(*"12", "enter")
        await pilot.pause()
        assert "at least 1000 tokens" in str(app.screen.query_one(".ask-problem").render())
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, AskScreen))
    assert [v for _, v, _ in verbs(host.hostdb_path)] == ["model"]


async def test_the_palette_runs_a_verb_on_the_focused_pane(live_host: Any) -> None:
    host = live_host(a=[], b=[])
    app = make_app(host.hostdb_path)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: state(app, "b") == "idle")
        app.panes["b"].focus_target()
        await pilot.press("f1")
        await until(pilot, lambda: isinstance(app.screen, CommandPalette))
        await pilot.press(*"Pause b")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await until(pilot, lambda: state(app, "b") == "paused")
    assert [(p, v) for p, v, _ in verbs(host.hostdb_path)] == [("b", "pause")]


async def test_the_halt_record_shows_the_rule_and_resumes(live_host: Any) -> None:
    host = live_host(a=[])
    app = make_app(host.hostdb_path)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: state(app, "a") == "idle")
        app.panes["a"].focus_target()
        await pilot.press("f10")
        await until(pilot, lambda: "no halt of it" in notice(app))
        conn = connect(host.hostdb_path, create=False)
        submit_command(conn, Halt(panel="a", reason="looping on the same file"), by="watchdog")
        conn.close()
        await until(pilot, lambda: state(app, "a") == "halted")
        # The state comes with the panels table, the record with the event log, which the
        # host writes in batches: f10 before the record arrives says so instead of showing it.
        await until(pilot, lambda: app.panes["a"].halt is not None)
        await pilot.press("f10")
        await until(pilot, lambda: isinstance(app.screen, HaltRecordScreen))
        record = app.screen
        assert isinstance(record, HaltRecordScreen)
        shown = "\n".join(str(w.render()) for w in record.query(".record-box Static"))
        assert "by: watchdog" in shown and "looping on the same file" in shown
        await pilot.press("r")
        await until(pilot, lambda: state(app, "a") == "idle")
        assert not isinstance(app.screen, HaltRecordScreen)
    assert [(p, v) for p, v, _ in verbs(host.hostdb_path)][-1] == ("a", "resume")


async def test_a_read_only_halt_record_has_no_resume(live_host: Any) -> None:
    host = live_host(a=[])
    conn = connect(host.hostdb_path, create=False)
    submit_command(conn, Halt(panel="a", reason="stop"))
    conn.close()
    app = make_app(host.hostdb_path, read_only=True)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: state(app, "a") == "halted" and app.panes["a"].halt is not None)
        app.open_halt_record("a")
        await until(pilot, lambda: isinstance(app.screen, HaltRecordScreen))
        await pilot.press("r")
        await pilot.pause()
        assert isinstance(app.screen, HaltRecordScreen)
        assert not app.screen.query("#record-resume")
    assert [v for _, v, _ in verbs(host.hostdb_path)] == ["halt"]


async def test_a_click_focuses_the_pane_it_lands_in(live_host: Any) -> None:
    host = live_host(a=[], b=[])
    app = make_app(host.hostdb_path)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: state(app, "a") == "idle" and state(app, "b") == "idle")
        app.panes["a"].focus_target()
        target = app.panes["b"].transcript
        # Both panes laid out first: a click aimed before the layout settles lands elsewhere.
        await until(pilot, lambda: target.region.area > 0 and app.panes["a"].region.area > 0)
        await pilot.pause()
        assert await pilot.click(target), "the click did not land on b's transcript"
        await until(pilot, lambda: app.focused_pane() is app.panes["b"])
        await pilot.press(*"hi", "ctrl+s")
        await until(pilot, lambda: "operator > hi" in transcript(app, "b"))


def test_the_help_replaces_only_lines_the_repl_has() -> None:
    from panels.slash import HELP as REPL_HELP
    from panels.ui import slash

    assert {usage for usage, _ in REPL_HELP} >= slash._REPLACED  # the REPL's list moved on
    assert "/role_doc" in slash.help_text() and "/compress reads" in slash.help_text()


def test_the_help_says_what_quitting_does_to_the_team(tmp_path: Path) -> None:
    from panels.ui.slash import help_text

    viewer, own_host = help_text(), help_text(stops_team=True)
    assert "close this viewer (the team goes on)" in viewer and "stop the team" not in viewer
    assert "close the dashboard and stop the team" in own_host and "goes on" not in own_host
    # `run` and `demo` (a host in this process) build the app that says so; attach does not.
    assert make_app(tmp_path / "host.sqlite", stops_team=True).stops_team
    assert not make_app(tmp_path / "host.sqlite").stops_team
