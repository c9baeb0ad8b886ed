"""write_memory, propose_role_amendment and log_choice, called by the model in a turn."""

from __future__ import annotations

import json
from typing import Any

import pytest
from tool_turns import results, run, tool_turn

from runtime.instance.home import InstancePaths
from runtime.turn.open import open_session
from runtime.turn.scripted import ScriptedDriver

pytestmark = pytest.mark.anyio


async def test_write_memory_appends_a_note_with_its_payload(
    instance: InstancePaths, approver: Any
) -> None:
    payload = {
        "observation": "the cache misses after /evict",
        "applies_to": ["prompt", "window"],
        "confidence": 0.8,
        "source": "turn 4",
    }
    driver = ScriptedDriver(
        [
            tool_turn(
                ("write_memory", {"text": "Cache note", "category": "insight", "payload": payload})
            )
        ]
    )
    async with open_session("t1", driver=driver, approver=approver) as s:
        out = results(await run(s, "remember this"))
    (note,) = list(instance.memory.glob("*.md"))
    text = note.read_text(encoding="utf-8")
    assert "] insight\n<!-- panel=t1 epoch=0 turn=1 -->\n\nCache note" in text
    assert "**observation:** the cache misses after /evict" in text
    assert "**applies_to:**\n- prompt\n- window\n" in text
    assert '"source": "turn 4"' in text
    assert not out["c0"].is_error and "noted under 'insight'" in out["c0"].content


async def test_write_memory_refuses_wrongly_typed_arguments(
    instance: InstancePaths, approver: Any
) -> None:
    driver = ScriptedDriver(
        [
            tool_turn(
                ("write_memory", {"text": "x", "payload": "observation: a string"}),
                ("write_memory", {"category": "no text"}),
                ("write_memory", {"text": "x", "colour": "red"}),
            )
        ]
    )
    async with open_session("t1", driver=driver, approver=approver) as s:
        out = results(await run(s, "go"))
    assert out["c0"].is_error and "payload must be a JSON object, got str" in out["c0"].content
    assert out["c1"].is_error and "missing required parameter 'text'" in out["c1"].content
    assert out["c2"].is_error and "unknown parameter(s) colour" in out["c2"].content
    assert not instance.memory.exists()


async def test_role_amendment_is_a_proposal_and_leaves_the_role_doc(
    instance: InstancePaths, approver: Any
) -> None:
    args = {"text": "Always run the tests.", "rationale": "twice forgot", "severity": "high"}
    driver = ScriptedDriver([tool_turn(("propose_role_amendment", args))])
    async with open_session("t1", driver=driver, approver=approver) as s:
        out = results(await run(s, "propose"))
    (proposal,) = list(instance.role_proposals.glob("*.md"))
    assert proposal.name.endswith("_always-run-the-tests.md")
    body = proposal.read_text(encoding="utf-8")
    assert "severity: high" in body and 'rationale: "twice forgot"' in body
    assert body.rstrip().endswith("Always run the tests.")
    assert instance.role.read_text(encoding="utf-8") == "ROLE v1"
    assert str(proposal) in out["c0"].content


async def test_bad_severity_is_refused(instance: InstancePaths, approver: Any) -> None:
    args = {"text": "t", "rationale": "r", "severity": "urgent"}
    driver = ScriptedDriver([tool_turn(("propose_role_amendment", args))])
    async with open_session("t1", driver=driver, approver=approver) as s:
        out = results(await run(s, "propose"))
    assert out["c0"].is_error and "one of low, medium, high" in out["c0"].content


async def test_log_choice_appends_a_json_line_with_the_turn(
    instance: InstancePaths, approver: Any
) -> None:
    args = {"decision_type": "design", "decision": "use sqlite", "rationale": "one file"}
    driver = ScriptedDriver([tool_turn(("log_choice", args))])
    async with open_session("t1", driver=driver, approver=approver) as s:
        await run(s, "decide")
        user_row = (await s.store.rows())[0].id
    lines = (instance.root / "choices.jsonl").read_text(encoding="utf-8").splitlines()
    record = json.loads(lines[0])
    assert record["decision"] == "use sqlite" and record["turn_row_id"] == user_row
    assert record["context_summary"] == ""
