"""The opt-in context switches: the file manifest, auto-evict after write, compressed reads."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from runtime.instance.home import InstancePaths
from runtime.tools.compress_reads import STUB_PREFIX, plan_compress_reads
from runtime.turn.driver import (
    Done,
    DriverEvent,
    TextDelta,
    ToolCall,
    ToolResult,
    TurnRequest,
    Usage,
)
from runtime.turn.open import open_session
from runtime.turn.scripted import ScriptedDriver
from runtime.window.rows import Row

pytestmark = pytest.mark.anyio


def read_turn(call_id: str, path: Path, shown: str) -> list[DriverEvent]:
    return [
        ToolCall(call_id, "Read", {"file_path": str(path)}),
        ToolResult(call_id, shown),
        TextDelta("read it"),
        Usage(10, 5),
        Done(),
    ]


def reply() -> list[DriverEvent]:
    return [TextDelta("ok"), Usage(10, 2), Done()]


def manifest_of(request: TurnRequest) -> str | None:
    found = [b["text"] for b in request.blocks if b["text"].startswith("<<file manifest")]
    return found[0] if found else None


async def run(session: Any, text: str) -> list[Any]:
    return [e async for e in session.turn(text)]


async def test_manifest_fresh_stale_gone(
    instance: InstancePaths, approver: Any, configure: Callable[..., Any], tmp_path: Path
) -> None:
    configure(file_stat_manifest_enabled=True)
    target = tmp_path / "a.py"
    target.write_bytes(b"print(1)\n")
    # The Read tool shows numbered lines; the manifest must hash the file's bytes both times.
    driver = ScriptedDriver([read_turn("r1", target, "     1\tprint(1)"), *[reply()] * 4])
    async with open_session("t1", driver=driver, approver=approver) as s:
        await run(s, "read a.py")
        await run(s, "still the same?")
        await run(s, "again, untouched")
        target.write_bytes(b"print(2)\n")
        await run(s, "after an outside edit")
        target.unlink()
        await run(s, "after a delete")
    assert manifest_of(driver.requests[0]) is None  # nothing read yet
    fresh, fresh_again, stale, gone = (manifest_of(r) for r in driver.requests[1:])
    assert fresh is not None and f"| {target} | fresh | 9 B |" in fresh
    assert fresh_again is not None and "| fresh |" in fresh_again
    assert stale is not None and f"| {target} | STALE | 9 B |" in stale
    assert gone is not None and f"| {target} | gone |" in gone


async def test_manifest_is_off_by_default(
    instance: InstancePaths, approver: Any, tmp_path: Path
) -> None:
    target = tmp_path / "a.py"
    target.write_text("x", encoding="utf-8")
    driver = ScriptedDriver([read_turn("r1", target, "x"), reply()])
    async with open_session("t1", driver=driver, approver=approver) as s:
        await run(s, "read")
        await run(s, "next")
    assert manifest_of(driver.requests[1]) is None


def edit_turn(path: Path) -> list[DriverEvent]:
    return [
        ToolCall("r1", "Read", {"file_path": str(path)}),
        ToolResult("r1", "old body " * 50),
        ToolCall(
            "e1", "Edit", {"file_path": str(path), "old_string": "o" * 400, "new_string": "n"}
        ),
        ToolResult("e1", "The file was edited."),
        TextDelta("Edited."),
        Usage(10, 5),
        Done(),
    ]


@pytest.mark.parametrize("enabled", [True, False])
async def test_auto_evict_after_write(
    instance: InstancePaths,
    approver: Any,
    configure: Callable[..., Any],
    tmp_path: Path,
    enabled: bool,
) -> None:
    configure(auto_evict_after_write=enabled)
    target = tmp_path / "a.py"
    driver = ScriptedDriver([edit_turn(target)])
    async with open_session("t1", driver=driver, approver=approver) as s:
        await run(s, "edit a.py")
        stored = (await s.store.rows())[-1]
    calls = {b["id"]: b for b in stored.blocks if b["type"] == "tool_use"}
    answers = {b["tool_use_id"]: b for b in stored.blocks if b["type"] == "tool_result"}
    if enabled:
        assert calls["e1"]["input"] == {"file_path": str(target), "_evicted": True}
        assert calls["r1"]["input"] == {"file_path": str(target), "_evicted": True}
        assert answers["r1"]["content"] == "[evicted]"
        assert "auto_evict_after_write" in instance.debug_log.read_text(encoding="utf-8")
    else:
        assert calls["e1"]["input"]["old_string"] == "o" * 400
        assert answers["r1"]["content"].startswith("old body")
    assert stored.blocks[-1] == {"type": "text", "text": "Edited."}


async def test_repeated_reads_become_unchanged_and_diff_stubs(
    instance: InstancePaths, approver: Any, configure: Callable[..., Any], tmp_path: Path
) -> None:
    configure(compress_repeated_reads=True)
    target = tmp_path / "big.py"
    v1 = "\n".join(f"line {i}" for i in range(60))
    v2 = v1.replace("line 30", "line thirty")
    driver = ScriptedDriver(
        [read_turn("r1", target, v1), read_turn("r2", target, v1), read_turn("r3", target, v2)]
    )

    def result_of(rows: list[Row], call_id: str) -> tuple[Row, str]:
        for row in rows:
            for b in row.blocks:
                if b.get("tool_use_id") == call_id:
                    return row, b["content"]
        raise AssertionError(call_id)

    async with open_session("t1", driver=driver, approver=approver) as s:
        await run(s, "read")
        await run(s, "read again")
        rows = await s.store.rows()
        first_row, first = result_of(rows, "r1")
        _, second = result_of(rows, "r2")
        assert first.startswith(f"{STUB_PREFIX}{target}: unchanged")
        assert first_row.compressed
        assert second == v1  # the newest keeps its full text
        await run(s, "and once more")
        rows = await s.store.rows()
    second_row, second = result_of(rows, "r2")
    _, third = result_of(rows, "r3")
    assert second.startswith(f"{STUB_PREFIX}{target}: shown as a diff")
    assert "-line 30" in second and "+line thirty" in second and second_row.compressed
    assert third == v2


def test_plan_leaves_pinned_rows_and_different_ranges_alone() -> None:
    def row(row_id: int, call: str, offset: int | None, text: str, pinned: bool = False) -> Row:
        inp: dict[str, Any] = {"file_path": "/a.py"}
        if offset is not None:
            inp["offset"] = offset
        blocks = (
            {"type": "tool_use", "id": call, "name": "Read", "input": inp},
            {"type": "tool_result", "tool_use_id": call, "content": text},
        )
        return Row(row_id, "t", "assistant", blocks, 10, pinned=pinned)

    same = "x\n" * 200
    rows = [row(1, "a", None, same, pinned=True), row(2, "b", 5, same), row(3, "c", None, same)]
    assert plan_compress_reads(rows) == {}  # row 1 pinned; row 2 read another range
    rows.append(row(4, "d", 5, same))
    plan = plan_compress_reads(rows)
    assert list(plan) == [2]
    assert plan[2][1]["content"].endswith("identical to the later Read in row 4]")


def test_a_stub_never_grows_a_row() -> None:
    from runtime.tools.compress_reads import stub_for

    assert stub_for("tiny", "tiny", "/a.py", 3) is None
    assert stub_for("a\nb\n", "a\nc\n", "/a.py", 3) is None
