"""The context viewer against a real host: real rows and budgets, window verbs from the
screen reaching the host, a read-only viewer that browses only, and a store it cannot read."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from rich.text import Text
from textual.widgets import DataTable, Static

from panels.hostdb import PanelRow, connect, set_meta
from panels.ui.app import DashboardApp, make_app
from panels.ui.context import ContextScreen, SlotForm
from panels.ui.storeview import WindowState, budget
from runtime.instance.config import InstanceConfig
from runtime.window.rows import Row, Slot
from tests.panels.host.conftest import reply
from tests.panels.ui.conftest import commands, say, until, write_host_db

pytestmark = pytest.mark.anyio
SIZE = (200, 50)


def store_rows(app: DashboardApp, panel: str) -> list[tuple[int, bool]]:
    """(id, pinned) of the panel's rows, read from its store file directly."""
    root = Path(app.meta[f"instance:{panel}"])
    conn = sqlite3.connect(f"{(root / 'turns.sqlite').as_uri()}?mode=ro", uri=True)
    try:
        rows = conn.execute("SELECT id, pinned FROM window_rows ORDER BY id").fetchall()
        return [(int(i), bool(p)) for i, p in rows]
    finally:
        conn.close()


def store_tokens(app: DashboardApp, panel: str) -> list[int]:
    root = Path(app.meta[f"instance:{panel}"])
    conn = sqlite3.connect(f"{(root / 'turns.sqlite').as_uri()}?mode=ro", uri=True)
    try:
        return [int(t) for (t,) in conn.execute("SELECT tokens FROM window_rows ORDER BY id")]
    finally:
        conn.close()


def stored_turns(app: DashboardApp, panel: str) -> int:
    """Turns the panel's store holds as answered (its assistant rows, committed)."""
    root = Path(app.meta[f"instance:{panel}"])
    conn = sqlite3.connect(f"{(root / 'turns.sqlite').as_uri()}?mode=ro", uri=True)
    try:
        sql = "SELECT count(*) FROM window_rows WHERE role = 'assistant' AND status = 'complete'"
        return int(conn.execute(sql).fetchone()[0])
    finally:
        conn.close()


def store_slots(app: DashboardApp, panel: str) -> dict[str, str]:
    root = Path(app.meta[f"instance:{panel}"])
    conn = sqlite3.connect(f"{(root / 'turns.sqlite').as_uri()}?mode=ro", uri=True)
    try:
        return dict(conn.execute("SELECT label, content FROM slots").fetchall())
    finally:
        conn.close()


def shown(screen: ContextScreen, selector: str) -> str:
    return str(screen.query_one(selector, Static).render())


def cells(screen: ContextScreen) -> list[list[str]]:
    """The rows table's cells; each must be a `Text` (a str cell would be read as markup)."""
    table = screen.query_one("#context-rows", DataTable)
    found = [table.get_row_at(i) for i in range(table.row_count)]
    assert all(isinstance(c, Text) for row in found for c in row)
    return [[c.plain for c in row] for row in found]


async def two_turns(pilot: Any, app: DashboardApp, host: Any) -> None:
    await until(pilot, lambda: "a" in app.panes and "instance:a" in app.meta)
    say(host.hostdb_path, "a", "hello [bold]one[/bold]")
    await until(pilot, lambda: stored_turns(app, "a") == 1)
    say(host.hostdb_path, "a", "second question")
    await until(pilot, lambda: stored_turns(app, "a") == 2)


async def open_viewer(pilot: Any, app: DashboardApp, rows: int) -> ContextScreen:
    app.panes["a"].focus_target()
    await pilot.press("f8")
    await until(pilot, lambda: isinstance(app.screen, ContextScreen))
    screen = app.screen
    assert isinstance(screen, ContextScreen)
    await until(pilot, lambda: screen.state is not None and len(screen.state.rows) == rows)
    return screen


async def test_the_viewer_shows_the_rows_and_budget_of_the_real_store(live_host: Any) -> None:
    host = live_host(a=[reply("first answer"), reply("second answer")])
    app = make_app(host.hostdb_path)
    async with app.run_test(size=SIZE) as pilot:
        await two_turns(pilot, app, host)
        screen = await open_viewer(pilot, app, rows=4)
        ids = [i for i, _ in store_rows(app, "a")]
        table = cells(screen)
        assert [int(r[1]) for r in table] == ids
        assert [r[2] for r in table] == ["user", "assistant", "user", "assistant"]
        # Untrusted text is shown as written, markup and all, never interpreted.
        assert table[0][5] == "hello [bold]one[/bold]"
        assert table[1][5] == "first answer"
        budget = shown(screen, "#context-budget")
        for part in ("role doc", "tools and framing", "pinned rows", "slots",
                     "window (rolling rows)", "last turn's input", "window cap"):  # fmt: skip
            assert part in budget, part
        lines = {line[:22].strip(): line[22:].split(None, 1) for line in budget.splitlines()}
        assert lines["last turn's input"] == ["100", "reported"]  # the script's Usage(100, 10)
        window = sum(tokens for tokens in store_tokens(app, "a"))
        assert lines["window (rolling rows)"][0] == str(window)
        assert lines["pinned rows"] == ["0", "none"]
        assert "(4 rows)" in budget
        assert "turns.sqlite" in shown(screen, "#context-title")
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, ContextScreen))
    assert commands(host.hostdb_path) == [
        ("input", '{"text": "hello [bold]one[/bold]"}', "done"),
        ("input", '{"text": "second question"}', "done"),
    ]


async def test_pin_unpin_evict_and_slot_from_the_viewer_reach_the_host(live_host: Any) -> None:
    host = live_host(a=[reply("first answer"), reply("second answer")])
    app = make_app(host.hostdb_path)
    async with app.run_test(size=SIZE) as pilot:
        await two_turns(pilot, app, host)
        screen = await open_viewer(pilot, app, rows=4)
        first, second, third, fourth = (i for i, _ in store_rows(app, "a"))

        await pilot.press("p")  # the cursor starts on the first row
        await until(pilot, lambda: (first, True) in store_rows(app, "a"))
        await until(pilot, lambda: cells(screen)[0][3] == "yes")
        assert "pinned rows" in shown(screen, "#context-budget")
        await pilot.press("p")
        await until(pilot, lambda: (first, False) in store_rows(app, "a"))
        await until(pilot, lambda: cells(screen)[0][3] == "")

        # Pin the fourth row, then mark the second, third and fourth: evicting them keeps
        # the pinned one (the host never drops pinned rows).
        await pilot.press("down", "down", "down", "p")
        await until(pilot, lambda: (fourth, True) in store_rows(app, "a"))
        await pilot.press("up", "up", "space", "down", "space", "down", "space")
        assert screen.marked == {second, third, fourth}
        await pilot.press("e")
        await until(pilot, lambda: store_rows(app, "a") == [(first, False), (fourth, True)])
        await until(pilot, lambda: len(cells(screen)) == 2)

        await pilot.press("a")
        await until(pilot, lambda: isinstance(app.screen, SlotForm))
        await pilot.press(*"goal", "tab", *"ship it", "ctrl+s")
        await until(pilot, lambda: store_slots(app, "a") == {"goal": "ship it"})
        await until(pilot, lambda: screen.query_one("#context-slots", DataTable).row_count == 1)
        await pilot.press("s")  # edits the slot under the slot cursor: empty text removes it
        await until(pilot, lambda: isinstance(app.screen, SlotForm))
        await pilot.press("f7", "backspace", "ctrl+s")  # f7: select all
        await until(pilot, lambda: store_slots(app, "a") == {})
    verbs = [(v, json.loads(a)) for v, a, _ in commands(host.hostdb_path)][2:]
    assert verbs == [
        ("pin", {"row_id": first}),
        ("unpin", {"row_id": first}),
        ("pin", {"row_id": fourth}),
        ("evict", {"what": "rows", "count": None, "row_ids": [second, third, fourth]}),
        ("slot", {"label": "goal", "content": "ship it"}),
        ("slot", {"label": "goal", "content": None}),
    ]
    assert all(state == "done" for _, _, state in commands(host.hostdb_path))


async def test_a_read_only_viewer_browses_the_context_and_sends_nothing(live_host: Any) -> None:
    host = live_host(a=[reply("first answer"), reply("second answer")])
    writer = make_app(host.hostdb_path)
    async with writer.run_test(size=SIZE) as pilot:
        await two_turns(pilot, writer, host)
    app = make_app(host.hostdb_path, read_only=True)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: "a" in app.panes and "instance:a" in app.meta)
        screen = await open_viewer(pilot, app, rows=4)
        await pilot.press("space", "p", "e", "a", "s")
        await pilot.pause()
        assert not isinstance(app.screen, SlotForm)
        assert screen.check_action("pin", ()) is False
        offered = {b.binding.action for b in screen.active_bindings.values() if b.enabled}
        assert "close" in offered and not offered & {"pin", "evict", "add_slot", "edit_slot"}
    assert [v for v, _, _ in commands(host.hostdb_path)] == ["input", "input"]
    assert all(not pinned for _, pinned in store_rows(app, "a"))


def offline_db(tmp_path: Path, **meta: str) -> Path:
    path = tmp_path / "host.sqlite"
    write_host_db(path, [PanelRow(name="a", kind="worker", state="idle", updated_ts=1.0)])
    conn = connect(path)
    try:
        set_meta(conn, meta)
    finally:
        conn.close()
    return path


@pytest.mark.parametrize("content", [None, b"this is not a database, only some bytes" * 100])
async def test_a_store_that_cannot_be_read_is_named_not_a_crash(
    tmp_path: Path, content: bytes | None
) -> None:
    root = tmp_path / "home" / "a"
    root.mkdir(parents=True)
    if content is not None:
        (root / "turns.sqlite").write_bytes(content)
    app = make_app(offline_db(tmp_path, **{"instance:a": str(root)}), read_only=True)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: "a" in app.panes and "instance:a" in app.meta)
        app.open_context("a")
        await until(pilot, lambda: isinstance(app.screen, ContextScreen))
        screen = app.screen
        assert isinstance(screen, ContextScreen)
        await until(pilot, lambda: screen.problem is not None)
        text = shown(screen, "#context-budget")
        assert text.startswith("cannot show this panel's context")
        assert str(root / "turns.sqlite") in text
        await pilot.press("escape")  # the viewer goes on
        await until(pilot, lambda: not isinstance(app.screen, ContextScreen))


async def test_a_host_that_did_not_record_the_files_is_named(tmp_path: Path) -> None:
    path = offline_db(tmp_path)
    app = make_app(path, read_only=True)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: "a" in app.panes)
        app.open_context("a")
        await until(pilot, lambda: isinstance(app.screen, ContextScreen))
        screen = app.screen
        assert isinstance(screen, ContextScreen)
        await until(pilot, lambda: screen.problem is not None)
        assert str(path) in screen.problem
        assert "restart the team's host" in screen.problem


def test_the_budget_says_which_counts_are_reported_and_which_estimated() -> None:
    def row(ident: int, tokens: int, *, exact: bool, pinned: bool = False) -> Row:
        return Row(ident, "t", "user", ({"type": "text", "text": "x"},), tokens,
                   tokens_exact=exact, pinned=pinned)  # fmt: skip

    rows = [row(1, 40, exact=True, pinned=True), row(2, 10, exact=False), row(3, 30, exact=True)]
    slots = [Slot("goal", "system", "x" * 40, 0, "t")]
    usage = '{"input_tokens": 300, "cache_read_input_tokens": 100}'
    state = WindowState(rows, slots, {"last_usage": usage})
    parts = {p.name: (p.tokens, p.how) for p in budget(state, "r" * 80, InstanceConfig())}
    assert parts == {
        "role doc": (20, "estimated"),
        "tools and framing": (400 - 20 - 80 - 10, "estimated (last reported input minus the rest)"),
        "pinned rows": (40, "reported"),
        "slots": (10, "estimated"),
        "window (rolling rows)": (40, "partly estimated"),
        "last turn's input": (400, "reported"),
    }
    unknown = {p.name: p.tokens for p in budget(WindowState(rows, [], {}), None, InstanceConfig())}
    assert unknown["role doc"] is None and unknown["tools and framing"] is None
    assert unknown["last turn's input"] is None
