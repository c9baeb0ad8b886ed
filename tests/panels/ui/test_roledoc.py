"""The role-doc editor against a real host: a save reaches the next turn's system prompt and
its diff is shown; unsaved edits need a second Esc; a read-only viewer saves nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Static, TextArea

from panels.ui.app import DashboardApp, make_app
from panels.ui.roledoc import RoleDocScreen, role_diff
from tests.panels.host.conftest import reply
from tests.panels.ui.conftest import commands, say, until
from tests.panels.ui.test_context import stored_turns

pytestmark = pytest.mark.anyio
SIZE = (200, 50)
ROLE = 'role = "role.md"\n'  # after each panel's table in the team file: its role doc


def shown(screen: RoleDocScreen, selector: str) -> str:
    return str(screen.query_one(selector, Static).render())


async def open_editor(pilot: Any, app: DashboardApp) -> RoleDocScreen:
    await until(pilot, lambda: "a" in app.panes and "instance:a" in app.meta)
    app.panes["a"].focus_target()
    await pilot.press("f9")
    await until(pilot, lambda: isinstance(app.screen, RoleDocScreen))
    screen = app.screen
    assert isinstance(screen, RoleDocScreen)
    await until(pilot, lambda: screen.loaded)
    assert screen.saved is not None
    return screen


async def test_a_saved_role_doc_is_the_next_turns_system_prompt(
    live_host: Any, tmp_path: Path
) -> None:
    role = tmp_path / "role.md"
    role.write_text("You are a careful tester.\n", encoding="utf-8")
    host = live_host(a=[reply("one"), reply("two")], policy=ROLE)
    app = make_app(host.hostdb_path)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: "a" in app.panes and "instance:a" in app.meta)
        say(host.hostdb_path, "a", "first")
        await until(pilot, lambda: stored_turns(app, "a") == 1)
        assert host.drivers["a"].requests[0].system == "You are a careful tester.\n"

        screen = await open_editor(pilot, app)
        area = screen.query_one("#roledoc-text", TextArea)
        assert area.text == "You are a careful tester.\n"
        assert str(role) in shown(screen, "#roledoc-message")
        await pilot.press(*"Be brief. ", "ctrl+s")  # typed where the cursor starts
        await until(pilot, lambda: role.read_text(encoding="utf-8").startswith("Be brief. "))
        diff = shown(screen, "#roledoc-diff")
        assert "+Be brief. You are a careful tester." in diff
        removed = [
            ln for ln in diff.splitlines() if ln.startswith("-") and not ln.startswith("---")
        ]
        assert removed == ["-You are a careful tester."]
        await pilot.press("escape")  # saved: closes at once
        await until(pilot, lambda: not isinstance(app.screen, RoleDocScreen))

        say(host.hostdb_path, "a", "second")
        await until(pilot, lambda: stored_turns(app, "a") == 2)
    assert host.drivers["a"].requests[1].system == "Be brief. You are a careful tester.\n"
    assert [(v, s) for v, _, s in commands(host.hostdb_path)] == [
        ("input", "done"),
        ("role", "done"),
        ("input", "done"),
    ]


async def test_escape_with_unsaved_edits_asks_again_and_keeps_the_file(
    live_host: Any, tmp_path: Path
) -> None:
    role = tmp_path / "role.md"
    role.write_text("v1\n", encoding="utf-8")
    host = live_host(a=[], policy=ROLE)
    app = make_app(host.hostdb_path)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_editor(pilot, app)
        await pilot.press(*"changed ", "escape")
        assert app.screen is screen
        assert "unsaved edits" in shown(screen, "#roledoc-message")
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, RoleDocScreen))
    assert role.read_text(encoding="utf-8") == "v1\n"
    assert commands(host.hostdb_path) == []


async def test_a_read_only_viewer_reads_the_role_doc_and_saves_nothing(
    live_host: Any, tmp_path: Path
) -> None:
    role = tmp_path / "role.md"
    role.write_text("v1\n", encoding="utf-8")
    host = live_host(a=[], policy=ROLE)
    app = make_app(host.hostdb_path, read_only=True)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: "a" in app.panes and "instance:a" in app.meta)
        app.open_role_doc("a")  # a read-only viewer has no composer to focus
        await until(pilot, lambda: isinstance(app.screen, RoleDocScreen))
        screen = app.screen
        assert isinstance(screen, RoleDocScreen)
        await until(pilot, lambda: screen.saved is not None)
        area = screen.query_one("#roledoc-text", TextArea)
        assert area.text == "v1\n" and area.read_only
        await pilot.press(*"xyz", "ctrl+s")
        await pilot.pause()
        assert area.text == "v1\n"
        assert "read-only viewer" in shown(screen, "#roledoc-message")
        assert screen.check_action("save", ()) is False
    assert role.read_text(encoding="utf-8") == "v1\n"
    assert commands(host.hostdb_path) == []


async def test_a_panel_without_a_role_doc_file_says_how_to_set_one(live_host: Any) -> None:
    host = live_host(a=[])
    app = make_app(host.hostdb_path)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_editor_without_doc(pilot, app)
        assert "has no role doc file" in shown(screen, "#roledoc-message")
        await pilot.press("ctrl+s")
        await pilot.pause()
    assert commands(host.hostdb_path) == []


async def open_editor_without_doc(pilot: Any, app: DashboardApp) -> RoleDocScreen:
    await until(pilot, lambda: "a" in app.panes and "instance:a" in app.meta)
    app.open_role_doc("a")
    await until(pilot, lambda: isinstance(app.screen, RoleDocScreen))
    screen = app.screen
    assert isinstance(screen, RoleDocScreen)
    await until(pilot, lambda: screen.loaded)
    return screen


def test_the_diff_is_unified_and_names_the_file() -> None:
    diff = role_diff("a\nb\n", "a\nc\n", name="role.md")
    assert diff.splitlines() == [
        "--- role.md (before)",
        "+++ role.md (saved)",
        "@@ -1,2 +1,2 @@",
        " a",
        "-b",
        "+c",
    ]
    assert role_diff("same", "same", name="x") == ""


async def test_the_editor_shows_the_lane_and_refuses_to_save_one_that_cannot_be_read(
    live_host: Any, tmp_path: Path
) -> None:
    role = tmp_path / "role.md"
    role.write_text("---\nwritable: [src/**]\nrecipients: [b]\n---\nBody.\n", encoding="utf-8")
    host = live_host(a=[], policy=ROLE)
    app = make_app(host.hostdb_path)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_editor(pilot, app)
        lane = shown(screen, "#roledoc-lane")
        assert "writable: src/**" in lane and "recipients: b" in lane
        assert "tools: (not restricted)" in lane
        area = screen.query_one("#roledoc-text", TextArea)
        area.move_cursor((2, 0))  # the start of `recipients: [b]`
        await pilot.press(*"tools: [no]", "enter", "ctrl+s")
        await until(pilot, lambda: "cannot be read" in shown(screen, "#roledoc-lane"))
        assert "line 3" in shown(screen, "#roledoc-lane") or ":3:" in shown(screen, "#roledoc-lane")
        assert "tools[0]" in shown(screen, "#roledoc-lane")
        assert "not saved" in shown(screen, "#roledoc-message")
        await pilot.pause()
    assert role.read_text(encoding="utf-8").startswith("---\nwritable: [src/**]\nrecipients")
    assert commands(host.hostdb_path) == []
