"""The transcript widget: streamed text joins its line, tool results fold into their call's
line, the oldest lines go past the cap, and the view follows the end only while it is there."""

from __future__ import annotations

from typing import Any

import pytest
from textual.app import App, ComposeResult

from panels.hostdb import catalogue as ev
from panels.ui.entries import Fold, Line, Stream, entries, visible
from panels.ui.transcript import Transcript, _wrap

pytestmark = pytest.mark.anyio


class Host(App[None]):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__()
        self.kwargs = kwargs

    def compose(self) -> ComposeResult:
        yield Transcript(**self.kwargs)


def screen_rows(log: Transcript) -> list[str]:
    return [log.render_line(y).text.rstrip() for y in range(log.size.height)]


async def test_streamed_pieces_continue_the_open_line() -> None:
    app = Host()
    async with app.run_test(size=(60, 10)) as pilot:
        log = app.query_one(Transcript)
        log.add(entries(ev.Said(panel="a", text="Hello, ")))
        log.add(entries(ev.Said(panel="a", text="wor")))
        log.add(entries(ev.Said(panel="a", text="ld.\nSecond")))
        log.add(entries(ev.Said(panel="a", text=" line.")))
        await pilot.pause()
        assert log.text == "Hello, world.\nSecond line."
        assert screen_rows(log)[:2] == ["Hello, world.", "Second line."]
        log.add([Line("· turn 1 done")])
        log.add(entries(ev.Said(panel="a", text="next reply")))
        assert log.text.splitlines()[-2:] == ["· turn 1 done", "next reply"]


async def test_a_result_folds_into_its_call_line() -> None:
    app = Host()
    async with app.run_test(size=(100, 10)) as pilot:
        log = app.query_one(Transcript)
        log.add(entries(ev.ToolCalled(panel="a", id="t1", tool="Bash", input="ls")))
        log.add(entries(ev.ToolCalled(panel="a", id="t2", tool="Read", input="x.py")))
        log.add(entries(ev.ToolAnswered(panel="a", id="t1", content="a\nb\nc", error=False)))
        log.add(entries(ev.ToolAnswered(panel="a", id="t2", content="gone", error=True)))
        log.add([Fold("t1", "← result: again", False)])  # a second result for t1: own line
        await pilot.pause()
        assert log.text.splitlines() == [
            "→ Bash ls  ← result: a (+2 lines)",
            "→ Read x.py  ✗ error: gone",
            "  ← result: again",
        ]
        assert screen_rows(log)[0] == "→ Bash ls  ← result: a (+2 lines)"


async def test_long_lines_wrap_and_rewrap_on_resize() -> None:
    app = Host()
    async with app.run_test(size=(30, 10)) as pilot:
        log = app.query_one(Transcript)
        log.add([Line("one two three four five six seven eight nine ten eleven")])
        await pilot.pause()
        narrow = [row for row in screen_rows(log) if row]
        assert len(narrow) >= 2 and all(len(row) <= 30 for row in narrow)
        await pilot.resize_terminal(120, 10)
        await pilot.pause()
        assert [row for row in screen_rows(log) if row] == [
            "one two three four five six seven eight nine ten eleven"
        ]


async def test_the_oldest_lines_go_past_the_cap() -> None:
    app = Host(max_lines=100)
    async with app.run_test(size=(40, 10)) as pilot:
        log = app.query_one(Transcript)
        log.add([Line(f"line {i}") for i in range(250)])
        await pilot.pause()
        assert log.line_count <= 100
        assert log.text.splitlines()[-1] == "line 249"
        assert screen_rows(log)[-1] == "line 249"  # still following the end


async def test_scrolled_back_view_stays_put_while_lines_arrive() -> None:
    app = Host()
    async with app.run_test(size=(40, 10)) as pilot:
        log = app.query_one(Transcript)
        log.add([Line(f"line {i}") for i in range(100)])
        await pilot.pause()
        assert screen_rows(log)[-1] == "line 99"
        log.scroll_to(y=0, animate=False, immediate=True)
        await pilot.pause()
        log.add([Line("new")])
        await pilot.pause()
        assert screen_rows(log)[0] == "line 0"
        log.scroll_end(animate=False, immediate=True)
        await pilot.pause()
        log.add([Line("newer")])
        await pilot.pause()
        assert screen_rows(log)[-1] == "newer"


def test_control_characters_become_visible_escapes() -> None:
    assert visible("a\x1b[31mb\tc\r\u202ed\x07") == "a\\x1b[31mb    c\\x0d\\u202ed\\x07"
    assert visible("plain [bold] text\nnext") == "plain [bold] text\nnext"
    [stream] = entries(ev.Said(panel="a", text="\x1b]0;t\x07"))
    assert stream == Stream("\\x1b]0;t\\x07")


def test_wrap_breaks_at_spaces_and_cuts_long_words() -> None:
    assert _wrap("aaa bbb ccc", 7) == ["aaa bbb", "ccc"]
    assert _wrap("x" * 12, 5) == ["xxxxx", "xxxxx", "xx"]
    assert _wrap("", 5) == [""]
