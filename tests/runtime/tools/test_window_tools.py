"""Slots, pins, list_window, tune_window and inspect_context, called by the model in a turn."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from tool_turns import results, run, tool_turn

from runtime.instance.config import load_config
from runtime.instance.home import InstancePaths
from runtime.store import TurnStore
from runtime.turn.driver import ToolSpec
from runtime.turn.open import open_session
from runtime.turn.scripted import ScriptedDriver
from runtime.window.rows import NewRow

pytestmark = pytest.mark.anyio


def seed(instance: InstancePaths, n: int) -> list[int]:
    with TurnStore.open(instance.turns) as store:
        return store.append(
            [
                NewRow(
                    "user" if i % 2 == 0 else "assistant", ({"type": "text", "text": f"r{i}"},), 5
                )
                for i in range(n)
            ]
        )


async def test_every_tool_has_a_typed_schema(instance: InstancePaths, approver: Any) -> None:
    async with open_session("t1", driver=ScriptedDriver([]), approver=approver) as s:
        tools: dict[str, ToolSpec] = {t.name: t for t in s.tools}
    assert "read_skeleton" not in tools  # off unless read_skeleton_enabled
    expected = {
        "write_memory", "upsert_slot", "pin_row", "unpin_row", "list_pinned", "list_window",
        "inspect_context", "tune_window", "evict_last", "evict_ids", "evict_since",
        "evict_older_than", "mark_segment", "evict_thinking_blocks", "evict_tool_use_blocks",
        "evict_write_pairs", "propose_role_amendment", "log_choice",
        "wiki_read", "wiki_write", "wiki_list", "memory_search", "memory_index",
        "graph_add_node", "graph_add_edge", "graph_neighbors", "graph_match", "graph_path",
        "graph_query",
    }  # fmt: skip
    assert set(tools) == expected
    props = {name: t.input_schema["properties"] for name, t in tools.items()}
    assert props["pin_row"]["row_id"]["type"] == "integer"
    assert props["evict_ids"]["ids"] == {
        "type": "array", "description": "Row ids.", "items": {"type": "integer"}, "minItems": 1
    }  # fmt: skip
    assert props["write_memory"]["payload"]["type"] == "object"
    assert props["tune_window"]["low_water"]["type"] == "number"
    assert all(t.input_schema["additionalProperties"] is False for t in tools.values())


async def test_upsert_slot_updates_in_place_and_reaches_the_next_request(
    instance: InstancePaths, approver: Any
) -> None:
    driver = ScriptedDriver(
        [
            tool_turn(("upsert_slot", {"label": "hp", "content": "HP 90/100"})),
            tool_turn(("upsert_slot", {"label": "hp", "content": "HP 73/100", "role": "game"})),
            tool_turn(),
        ]
    )
    async with open_session("t1", driver=driver, approver=approver) as s:
        first = results(await run(s, "one"))
        await run(s, "two")
        await run(s, "three")
        slots = await s.store.slots()
    assert "slot 'hp' = 9 chars at position 0" in first["c0"].content
    assert [(x.label, x.role, x.content) for x in slots] == [("hp", "game", "HP 73/100")]
    assert "HP 73/100" in driver.requests[2].blocks[-2]["text"]


async def test_pin_unpin_and_list_pinned(instance: InstancePaths, approver: Any) -> None:
    first, _ = seed(instance, 2)
    driver = ScriptedDriver(
        [
            tool_turn(("pin_row", {"row_id": first, "label": "spec"}), ("list_pinned", {})),
            tool_turn(("unpin_row", {"row_id": first}), ("pin_row", {"row_id": 999})),
        ]
    )
    async with open_session("t1", driver=driver, approver=approver) as s:
        out = results(await run(s, "pin"))
        row = await s.store.row(first)
        assert row is not None and row.pinned and row.label == "spec"
        again = results(await run(s, "unpin"))
        row = await s.store.row(first)
    assert f"#{first}" in out["c1"].content and "pinned [spec]" in out["c1"].content
    assert row is not None and not row.pinned
    assert again["c1"].is_error and "no row 999" in again["c1"].content


async def test_list_window_marks_the_turn_in_flight(instance: InstancePaths, approver: Any) -> None:
    seed(instance, 4)
    driver = ScriptedDriver([tool_turn(("list_window", {"last": 2}))])
    async with open_session("t1", driver=driver, approver=approver) as s:
        out = results(await run(s, "what is in my window?"))
        rows = await s.store.rows()
    text = out["c0"].content
    assert text.startswith("5 rows in the window; the last 2:")
    assert f"#{rows[4].id}" in text and "this turn (in flight)" in text
    assert f"#{rows[3].id}" in text and f"#{rows[2].id}" not in text


async def test_tune_window_saves_typed_values_and_refuses_bad_ones(
    instance: InstancePaths, approver: Any
) -> None:
    driver = ScriptedDriver(
        [
            tool_turn(
                ("tune_window", {"max_window_turns": 40, "low_water": 0.5}),
                ("tune_window", {"max_window_tokens": "200k"}),
                ("tune_window", {"low_water": 5.0}),
                ("tune_window", {}),
            )
        ]
    )
    async with open_session("t1", driver=driver, approver=approver) as s:
        out = results(await run(s, "tune"))
        live = s.config
    saved = load_config(instance.config)
    assert (saved.max_window_turns, saved.window_low_water) == (40, 0.5)
    assert live.max_window_turns == 40
    assert "max_window_turns=40" in out["c0"].content
    assert out["c1"].is_error and "must be a JSON integer, got str" in out["c1"].content
    assert out["c2"].is_error and "not applied" in out["c2"].content
    assert out["c3"].is_error and "at least one of" in out["c3"].content


async def test_inspect_context_says_where_tokens_go_and_what_was_spent(
    instance: InstancePaths, approver: Any, configure: Callable[..., Any]
) -> None:
    seed(instance, 2)
    driver = ScriptedDriver([tool_turn(), tool_turn(("inspect_context", {}))])
    async with open_session("t1", driver=driver, approver=approver) as s:
        await s.store.upsert_slot("hp", "system", "HP 1")
        await run(s, "one")
        out = results(await run(s, "two"))
    text = out["c0"].content
    for part in (
        "role doc (system prompt)",
        "mnemara tool schemas (29 tools)",
        "pinned rows (0)",
        "slots (1)",
        "window rows",
        "file manifest",
        "last turn (reported): 10 input",
    ):
        assert part in text, part  # fmt: skip
    # The turn in flight counts as a turn; its usage arrives when it ends.
    assert "spend this session: 2 turns, 1 requests, 10 input tokens, 5 output tokens" in text
