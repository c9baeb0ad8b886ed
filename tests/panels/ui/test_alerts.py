"""The dashboard's alerts (panels/ui/alerts.py): the sequences, and one ring per new alert."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, cast

import pytest

from panels.hostdb import Logged, PanelRow, append_events, connect
from panels.hostdb import catalogue as ev
from panels.ui.alerts import AlertRinger, notification, terminal_style
from panels.ui.app import make_app
from tests.panels.ui.conftest import until, write_host_db


def alert(text: str = "a waits for your approval", **more: bool) -> ev.AlertRaised:
    return ev.AlertRaised(panel="a", alert="approval", text=text, cause=3, **more)


def test_the_notification_sequences() -> None:
    event = alert()
    assert notification(event, team="trio", style="777") == (
        "\x1b]777;notify;mnemara trio: approval;a waits for your approval\x07"
    )
    assert notification(event, team="trio", style="9") == (
        "\x1b]9;mnemara trio: approval: a waits for your approval\x07"
    )
    assert notification(alert(desktop=False), team="trio", style="9") == ""


def test_alert_text_cannot_end_or_split_the_sequence() -> None:
    nasty = alert("x\x07\x1b]0;owned\x1b\\;y\x9c")
    sequence = notification(nasty, team="t;2", style="777")
    body = sequence.removeprefix("\x1b]777;notify;").removesuffix("\x07")
    assert body.count(";") == 1  # title;body, nothing more
    assert not any(c in body for c in "\x07\x1b\x9c")


def test_the_style_follows_the_terminal() -> None:
    assert terminal_style({"TERM_PROGRAM": "iTerm.app"}) == "9"
    assert terminal_style({"TERM": "xterm-kitty"}) == "9"
    assert terminal_style({"TERM": "foot"}) == "777"
    assert terminal_style({}) == "777"


def test_the_backlog_does_not_ring_and_an_alert_rings_once() -> None:
    ringer = AlertRinger(opened=1000.0, env={})
    old, new = Logged(1, 500.0, alert("old")), Logged(2, 1001.0, alert("new"))
    said = Logged(3, 1002.0, ev.Said(panel="a", text="hi"))
    assert [a.text for a in ringer.due([old, new, said])] == ["new"]
    assert ringer.due([new]) == []  # read again: already rung


class Terminal:
    """What `AlertRinger.take` uses of an app on a real terminal: its bell and its driver."""

    def __init__(self, *, web: bool = False) -> None:
        self.is_headless, self.is_web = False, web
        self._driver = self
        self.written: list[str] = []

    def bell(self) -> None:
        self.written.append("BELL")

    def write(self, data: str) -> None:
        self.written.append(data)


def test_take_rings_and_writes_the_sequence_to_the_terminal_but_not_to_the_web() -> None:
    now = time.time()
    news = [Logged(1, now, alert("one")), Logged(2, now, alert("two", bell=False, desktop=False))]
    terminal, web = Terminal(), Terminal(web=True)
    AlertRinger(env={"TERM": "foot"}).take(cast(Any, terminal), news, team="trio")
    AlertRinger(env={}).take(cast(Any, web), news, team="trio")
    assert terminal.written == ["BELL", notification(alert("one"), team="trio", style="777")]
    assert web.written == ["BELL"]


@pytest.mark.anyio
async def test_the_dashboard_rings_once_per_alert(
    anyio_backend: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "host.sqlite"
    write_host_db(path, [PanelRow(name="a", kind="worker", state="idle", updated_ts=1.0)])
    writer = connect(path)
    append_events(writer, [(time.time() - 3600, alert("an hour ago"))])  # history: no ring
    app = make_app(path)
    rings: list[int] = []
    monkeypatch.setattr(app, "bell", lambda: rings.append(1))
    async with app.run_test() as pilot:
        await until(pilot, lambda: "a" in app.panes)
        now = time.time()
        news = [alert("one"), alert("two", bell=False), ev.Said(panel="a", text="hi"), alert("3")]
        append_events(writer, [(now, e) for e in news])
        await until(pilot, lambda: app.ringer.rung == 3)
        await pilot.pause()
    writer.close()
    assert rings == [1, 1]  # "two" asked for no bell
    assert app.ringer.rung == 3
