"""Approvals in the dashboard, against a real host whose Bash calls ask the operator."""

from __future__ import annotations

import json
from typing import Any

import pytest

from panels.hostdb import connect, submit_command
from panels.hostdb.verbs import AnswerRequest, Input
from panels.ui.app import DashboardApp, make_app
from panels.ui.modals import ApprovalScreen
from runtime.turn.driver import Done, ToolCall, ToolResult, Usage
from tests.panels.ui.conftest import ASK_BASH, transcript, until

pytestmark = pytest.mark.anyio
SIZE = (200, 50)
HOSTILE = 'echo "[bold]ok[/bold]" # \x1b[31mred'


def bash(command: str) -> list[Any]:
    """A turn that calls Bash; the script stands for the CLI running it, when allowed (a refused
    call's scripted result is dropped for the approver's refusal)."""
    return [ToolCall("t1", "Bash", {"command": command}), ToolResult("t1", "ran"),
            Usage(10, 1), Done()]  # fmt: skip


def give(path: Any, *verbs: Any) -> None:
    conn = connect(path, create=False)
    try:
        for verb in verbs:
            submit_command(conn, verb)
    finally:
        conn.close()


def shown(screen: ApprovalScreen, ident: str) -> str:
    return str(screen.query_one(ident).render())


def asking(app: DashboardApp) -> ApprovalScreen | None:
    return app.screen if isinstance(app.screen, ApprovalScreen) else None


def answers(path: Any) -> list[tuple[Any, ...]]:
    conn = connect(path, create=False)
    try:
        sql = "SELECT panel, args FROM commands WHERE verb = 'answer' ORDER BY id"
        return [(p, json.loads(a)) for p, a in conn.execute(sql).fetchall()]
    finally:
        conn.close()


async def test_y_answers_yes_and_the_call_runs(live_host: Any) -> None:
    host = live_host(a=[bash(HOSTILE)], policy=ASK_BASH)
    app = make_app(host.hostdb_path)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: "a" in app.panes)
        give(host.hostdb_path, Input(panel="a", text="deploy"))
        await until(pilot, lambda: asking(app) is not None)
        screen = asking(app)
        assert screen is not None
        pane = app.panes["a"]
        assert pane.has_class("waiting")
        assert "WAITING for approval (request 1)" in str(pane.query_one(".pane-status").render())
        assert "1 approval(s) waiting" in str(app.query_one("#header").render())
        # The question's body sits in a scrolling box, mounted a moment after the screen.
        await until(pilot, lambda: bool(screen.query("#approval-reason")))
        target = shown(screen, "#approval-target")
        assert '"[bold]ok[/bold]"' in target  # markup off: the brackets are text
        assert "\x1b" not in target and "31mred" in target  # the ESC itself never reaches it
        assert "a asks (request 1)" in shown(screen, "#approval-title")
        assert "Bash" in shown(screen, "#approval-tool")
        assert shown(screen, "#approval-reason").startswith("why: ")
        await pilot.press("y")
        await until(pilot, lambda: "turn 1 done" in transcript(app, "a"))
        assert "← result: ran" in transcript(app, "a") and "✗ error" not in transcript(app, "a")
        await until(pilot, lambda: not pane.has_class("waiting"))
        assert asking(app) is None
        assert "waiting" not in str(app.query_one("#header").render())
    assert answers(host.hostdb_path) == [("a", {"request": 1, "answer": "yes"})]


async def test_n_refuses_the_call(live_host: Any) -> None:
    host = live_host(a=[bash("echo no")], policy=ASK_BASH)
    app = make_app(host.hostdb_path)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: "a" in app.panes)
        give(host.hostdb_path, Input(panel="a", text="deploy"))
        await until(pilot, lambda: asking(app) is not None)
        await pilot.press("n")
        await until(pilot, lambda: "turn 1 done" in transcript(app, "a"))
        assert "✗ error" in transcript(app, "a") and "not approved" in transcript(app, "a")
        assert "approval 1: no" in transcript(app, "a")
    assert answers(host.hostdb_path) == [("a", {"request": 1, "answer": "no"})]


async def test_questions_queue_and_an_answer_elsewhere_closes_the_modal(live_host: Any) -> None:
    host = live_host(a=[bash("echo a")], b=[bash("echo b")], policy=ASK_BASH)
    app = make_app(host.hostdb_path)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: set(app.panes) == {"a", "b"})
        give(host.hostdb_path, Input(panel="a", text="go"))
        await until(pilot, lambda: asking(app) is not None)
        give(host.hostdb_path, Input(panel="b", text="go"))
        await until(
            pilot, lambda: "2 approval(s) waiting" in str(app.query_one("#header").render())
        )
        first = asking(app)
        assert first is not None and first.question.panel == "a"  # one modal at a time
        assert app.panes["b"].has_class("waiting")
        give(host.hostdb_path, AnswerRequest(panel="a", request=first.question.request,
                                             answer="yes"))  # fmt: skip
        await until(pilot, lambda: (s := asking(app)) is not None and s.question.panel == "b")
        await until(pilot, lambda: not first.is_attached)  # closed, not left under the next
        assert not app.panes["a"].has_class("waiting")
        await pilot.press("s")
        await until(pilot, lambda: "turn 1 done" in transcript(app, "b"))
        assert asking(app) is None
    assert answers(host.hostdb_path)[-1] == ("b", {"request": 2, "answer": "session"})


async def test_read_only_shows_the_queue_and_never_asks(live_host: Any) -> None:
    host = live_host(a=[bash("echo a")], policy=ASK_BASH)
    app = make_app(host.hostdb_path, read_only=True)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: "a" in app.panes)
        give(host.hostdb_path, Input(panel="a", text="go"))
        await until(pilot, lambda: app.panes["a"].has_class("waiting"))
        assert "1 approval(s) waiting" in str(app.query_one("#header").render())
        await pilot.press("y")
        await pilot.pause()
        assert asking(app) is None and app.sent == []
        give(host.hostdb_path, AnswerRequest(panel="a", request=1, answer="no"))
        await until(pilot, lambda: not app.panes["a"].has_class("waiting"))
