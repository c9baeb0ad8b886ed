"""The eviction tools in a turn: what goes, what stays, and the turn in flight never goes."""

from __future__ import annotations

from typing import Any

import pytest
from tool_turns import results, run, tool_turn

from runtime.instance.home import InstancePaths
from runtime.store import TurnStore
from runtime.tools.eviction import plan_drop_ids
from runtime.turn.open import open_session
from runtime.turn.scripted import ScriptedDriver
from runtime.window.rows import Block, NewRow

pytestmark = pytest.mark.anyio


def text_row(role: str, text: str) -> NewRow:
    return NewRow(role, ({"type": "text", "text": text},), 5)  # type: ignore[arg-type]


def seed(instance: InstancePaths, rows: list[NewRow]) -> list[int]:
    with TurnStore.open(instance.turns) as store:
        return store.append(rows)


def bulky_row() -> NewRow:
    blocks: tuple[Block, ...] = (
        {"type": "thinking", "thinking": "long thoughts " * 50, "signature": "s"},
        {"type": "tool_use", "id": "r1", "name": "Read", "input": {"file_path": "/w/a.py"}},
        {"type": "tool_result", "tool_use_id": "r1", "content": "old body " * 100},
        {
            "type": "tool_use",
            "id": "e1",
            "name": "Edit",
            "input": {"file_path": "/w/a.py", "old_string": "x" * 300, "new_string": "y" * 300},
        },
        {"type": "tool_result", "tool_use_id": "e1", "content": "edited"},
        {"type": "tool_use", "id": "b1", "name": "Bash", "input": {"command": "ls -la"}},
        {"type": "tool_result", "tool_use_id": "b1", "content": "many files " * 40},
        {"type": "text", "text": "Edited a.py."},
    )
    return NewRow("assistant", blocks, 900)


async def test_evict_ids_refuses_the_turn_in_flight(instance: InstancePaths, approver: Any) -> None:
    a, b = seed(instance, [text_row("user", "a"), text_row("assistant", "b")])
    in_flight = b + 1  # the input row of the next turn

    def script(request: Any) -> list[Any]:
        return tool_turn(("evict_ids", {"ids": [a, in_flight]}), ("evict_ids", {"ids": [a, 77]}))

    driver = ScriptedDriver([script])
    async with open_session("t1", driver=driver, approver=approver) as s:
        out = results(await run(s, "clean up"))
        ids = [r.id for r in await s.store.rows()]
    assert out["c0"].is_error
    assert f"row {in_flight} is the input of the turn in flight" in out["c0"].content
    assert "nothing was evicted" in out["c0"].content
    assert f"evicted 1 row(s): [{a}]" in out["c1"].content and "not in the window: [77]" in (
        out["c1"].content
    )
    assert a not in ids and b in ids and in_flight in ids


async def test_evict_last_does_not_count_the_turn_in_flight(
    instance: InstancePaths, approver: Any
) -> None:
    ids = seed(instance, [text_row("user", "a"), text_row("assistant", "b"), text_row("user", "c")])
    driver = ScriptedDriver([tool_turn(("evict_last", {"n": 1}))])
    async with open_session("t1", driver=driver, approver=approver) as s:
        out = results(await run(s, "drop the last one"))
        rows = await s.store.rows()
    assert f"[{ids[2]}]" in out["c0"].content
    assert [r.id for r in rows][:2] == ids[:2]
    assert rows[2].blocks[0]["text"] == "drop the last one"  # the input survived


async def test_pinned_rows_are_never_evicted(instance: InstancePaths, approver: Any) -> None:
    a, b = seed(instance, [text_row("user", "a"), text_row("assistant", "b")])
    with TurnStore.open(instance.turns) as store:
        store.set_pinned(a, True)
    driver = ScriptedDriver(
        [tool_turn(("evict_ids", {"ids": [a]}), ("evict_older_than", {"row_id": b + 1}))]
    )
    async with open_session("t1", driver=driver, approver=approver) as s:
        out = results(await run(s, "go"))
        ids = [r.id for r in await s.store.rows()]
    assert out["c0"].is_error and "pinned" in out["c0"].content
    assert f"evicted 1 row(s): [{b}]" in out["c1"].content
    assert a in ids and b not in ids


async def test_mark_segment_then_evict_since(instance: InstancePaths, approver: Any) -> None:
    (before,) = seed(instance, [text_row("user", "before")])
    driver = ScriptedDriver(
        [
            tool_turn(("mark_segment", {"name": "probe"})),
            tool_turn(text="exploring"),
            tool_turn(("evict_since", {"marker": "probe"}), ("evict_since", {"marker": "nope"})),
        ]
    )
    async with open_session("t1", driver=driver, approver=approver) as s:
        marked = results(await run(s, "mark"))
        await run(s, "explore")
        rows_before = await s.store.rows()
        out = results(await run(s, "forget the exploration"))
        rows = await s.store.rows()
    marker_at = rows_before[1].id  # the input row of the marking turn
    assert f"set after row {marker_at}" in marked["c0"].content
    survivors = [r.id for r in rows]
    assert before in survivors and marker_at in survivors
    assert all(r.id not in survivors for r in rows_before if r.id > marker_at)
    assert rows[-2].blocks[0]["text"] == "forget the exploration"
    assert out["c1"].is_error and "no marker named 'nope'" in out["c1"].content


async def test_block_evictions_keep_the_audit_shell(instance: InstancePaths, approver: Any) -> None:
    (row_id,) = seed(instance, [bulky_row()])
    driver = ScriptedDriver(
        [
            tool_turn(("evict_thinking_blocks", {"row_ids": [row_id]})),
            tool_turn(("evict_write_pairs", {})),
            tool_turn(("evict_tool_use_blocks", {"row_ids": [row_id]})),
        ]
    )
    async with open_session("t1", driver=driver, approver=approver) as s:
        out = results(await run(s, "thinking"))
        after_thinking = await s.store.row(row_id)
        await run(s, "writes")
        after_writes = await s.store.row(row_id)
        await run(s, "tools")
        after_tools = await s.store.row(row_id)
    assert f"1 row(s) changed: [{row_id}]" in out["c0"].content
    assert after_thinking is not None and after_writes is not None and after_tools is not None
    assert next(b["type"] for b in after_thinking.blocks) == "tool_use"
    calls = {b["id"]: b for b in after_writes.blocks if b["type"] == "tool_use"}
    answers = {b["tool_use_id"]: b for b in after_writes.blocks if b["type"] == "tool_result"}
    assert calls["e1"]["input"] == {"file_path": "/w/a.py", "_evicted": True}
    assert calls["r1"]["input"] == {"file_path": "/w/a.py", "_evicted": True}
    assert answers["r1"]["content"] == "[evicted]"
    assert calls["b1"]["input"] == {"command": "ls -la"}  # not a write pair
    bash_result = next(b for b in after_tools.blocks if b.get("tool_use_id") == "b1")
    assert bash_result["content"] == "[evicted]"
    bash_call = next(b for b in after_tools.blocks if b.get("id") == "b1")
    assert bash_call["input"] == {"command": "ls -la", "_evicted": True}
    assert after_tools.blocks[-1] == {"type": "text", "text": "Edited a.py."}
    assert after_tools.tokens < 900


async def test_typed_params_are_enforced(instance: InstancePaths, approver: Any) -> None:
    driver = ScriptedDriver(
        [
            tool_turn(
                ("evict_last", {"n": "2"}),
                ("evict_last", {"n": 0}),
                ("evict_ids", {"ids": ["3"]}),
                ("evict_last", {"n": True}),
            )
        ]
    )
    async with open_session("t1", driver=driver, approver=approver) as s:
        out = results(await run(s, "go"))
    assert "n must be a JSON integer, got str '2'" in out["c0"].content
    assert "n must be at least 1, got 0" in out["c1"].content
    assert "ids must be a list of integers; '3' is not one" in out["c2"].content
    assert "n must be a JSON integer, got bool True" in out["c3"].content
    assert all(r.is_error for r in out.values())


def test_plan_drop_ids_is_pure() -> None:
    from runtime.window.rows import Row

    rows = [Row(1, "t", "user", (), 1), Row(2, "t", "assistant", (), 1, pinned=True)]
    plan = plan_drop_ids(rows, [1, 3], in_flight=9)
    assert not isinstance(plan, str) and plan.delete == (1,)
    assert isinstance(plan_drop_ids(rows, [9], in_flight=9), str)
    assert isinstance(plan_drop_ids(rows, [2], in_flight=9), str)
