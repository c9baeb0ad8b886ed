"""The dashboard over a host.sqlite that no host is writing: the tail, layout and keys."""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path

import pytest

from panels.hostdb import Logged, PanelRow, append_events, command_values, connect, upsert_panels
from panels.hostdb import catalogue as ev
from panels.hostdb.verbs import Input
from panels.ui.app import make_app
from panels.ui.commands import open_sender
from panels.ui.lines import grid_columns
from panels.ui.tail import open_tail
from tests.panels.ui.conftest import transcript, until, write_host_db

pytestmark = pytest.mark.anyio


def rows(*names: str, state: str = "idle") -> list[PanelRow]:
    return [PanelRow(name=n, kind="worker", state=state, updated_ts=1.0) for n in names]


def test_grid_columns_keep_the_grid_square() -> None:
    assert [grid_columns(n) for n in (1, 2, 3, 4, 5, 9, 10, 16, 40)] == [1, 2, 2, 2, 3, 3, 4, 4, 4]


async def test_the_tail_starts_from_the_backlog_then_follows_new_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "host.sqlite"
    said = [ev.Said(panel="a", text=f"line {i}") for i in range(10)]
    write_host_db(path, rows("a"), said)
    writer = connect(path)
    async with open_tail(path, backlog=3) as tail:
        first = await tail.poll()
        assert [e.event for e in first.events] == said[-3:]
        assert first.panels == rows("a") and first.meta == {"team": "t", "pid": "0"}
        reads: list[int] = []
        read_events = tail._read_events

        async def counted() -> list[Logged]:
            reads.append(1)
            return await read_events()

        monkeypatch.setattr(tail, "_read_events", counted)
        assert not await tail.poll()  # nothing committed since: data_version unchanged,
        assert reads == []  # so no query ran
        append_events(writer, [(time.time(), ev.Said(panel="a", text="new"))])
        writer.execute(
            "INSERT INTO events (ts, panel, kind, data) VALUES (0, 'a', 'from_the_future', '{}')"
        )
        again = await tail.poll()
        assert again.panels is None and again.meta is None  # unchanged: not sent again
        assert isinstance(again.events[0].event, ev.Said) and again.events[0].event.text == "new"
        assert isinstance(again.events[1].event, ev.UnknownEvent)
        assert tail.cursor == again.events[1].id
        assert len(reads) == 1
        upsert_panels(writer, rows("a", state="busy"))
        assert (await tail.poll()).panels == rows("a", state="busy")
    writer.close()


async def test_the_tail_cannot_write(tmp_path: Path) -> None:
    path = tmp_path / "host.sqlite"
    write_host_db(path, rows("a"))
    async with open_tail(path) as tail:
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            await tail._conn.execute("DELETE FROM events")  # the tail's own connection


async def test_a_sent_verb_is_the_row_submit_command_writes(tmp_path: Path) -> None:
    path = tmp_path / "host.sqlite"
    write_host_db(path, rows("a"))
    verb = Input(panel="a", text="hi\nthere")
    async with open_sender(path, by="operator") as sender:
        ident = await sender.send(verb)
    conn = connect(path)
    row = conn.execute("SELECT ts, panel, verb, args, by, state FROM commands WHERE id = ?",
                       (ident,)).fetchone()  # fmt: skip
    conn.close()
    assert row[1:] == ("a", "input", json.dumps({"text": "hi\nthere"}), "operator", "pending")
    assert command_values(verb, by="operator", now=row[0]) == row[:5]


async def test_new_panels_get_a_pane_and_the_grid_grows(tmp_path: Path) -> None:
    path = tmp_path / "host.sqlite"
    write_host_db(path, rows("a"), [ev.Said(panel="a", text="before the viewer")])
    app = make_app(path)
    async with app.run_test(size=(160, 48)) as pilot:
        await until(pilot, lambda: "a" in app.panes)
        await until(pilot, lambda: "before the viewer" in transcript(app, "a"))
        header = app.query_one("#header")
        assert "host stopped" in str(header.render()) and "1 panel(s)" in str(header.render())
        writer = connect(path)
        upsert_panels(writer, rows("a", "b", "c", "d", "e"))
        writer.close()
        grid = app.query_one("#grid")
        await until(pilot, lambda: len(app.panes) == 5 and grid.styles.grid_size_columns == 3)
        await until(pilot, lambda: "5 panel(s)" in str(header.render()))


async def test_keys_cycle_focus_zoom_and_clear(tmp_path: Path) -> None:
    path = tmp_path / "host.sqlite"
    write_host_db(path, rows("a", "b", "c"))
    app = make_app(path)
    async with app.run_test(size=(160, 48)) as pilot:
        await until(pilot, lambda: len(app.panes) == 3)
        await pilot.pause()
        assert app.focused_pane() is app.panes["a"]
        await pilot.press("ctrl+n")
        assert app.focused_pane() is app.panes["b"]
        await pilot.press("ctrl+p", "ctrl+p")
        assert app.focused_pane() is app.panes["c"]
        await pilot.press("ctrl+f")
        await pilot.pause()
        assert app.zoomed == "c"
        assert [p.panel for p in app.panes.values() if p.display] == ["c"]
        assert app.panes["c"].region.width > 150
        await pilot.press("ctrl+f")
        await pilot.pause()
        assert app.zoomed is None and all(p.display for p in app.panes.values())
        composer = app.panes["c"].composer
        assert composer is not None
        await pilot.press(*"draft", "escape")
        assert composer.text == ""
        await pilot.press("ctrl+s")  # nothing to send
    conn = connect(path)
    assert conn.execute("SELECT count(*) FROM commands").fetchone()[0] == 0
    conn.close()
    assert app.sent == []


async def test_q_quits_and_leaves_the_database_alone(tmp_path: Path) -> None:
    path = tmp_path / "host.sqlite"
    write_host_db(path, rows("a"))
    app = make_app(path, read_only=True)
    async with app.run_test() as pilot:
        await until(pilot, lambda: "a" in app.panes)
        await pilot.press("q")
        await until(pilot, lambda: not app.is_running)
    conn = connect(path)
    assert conn.execute("SELECT count(*) FROM panels").fetchone()[0] == 1
    conn.close()
