"""Prompt assembly: deterministic bytes, cache-friendly layout, every slot sent, no thinking."""

from __future__ import annotations

import json

from runtime.turn.cache_ttl import CacheTtl
from runtime.turn.prompt import HEAD_TEXT, build_prompt, render_transcript, strip_cache_markers
from runtime.window.rows import Row, Slot


def row(i: int, role: str = "user", *blocks: dict[str, object], **kw: object) -> Row:
    content = blocks or ({"type": "text", "text": f"message {i}"},)
    ts = "2026-11-29T00:00:00+00:00"
    return Row(id=i, ts=ts, role=role, blocks=tuple(content), tokens=5, **kw)  # type: ignore[arg-type]


def body(prompt: object) -> bytes:
    p = prompt  # the bytes the driver would send: system, then the user content blocks
    return json.dumps({"system": p.system, "blocks": list(p.blocks)}, sort_keys=True).encode()  # type: ignore[attr-defined]


def test_two_turns_without_edits_share_system_and_transcript_prefix() -> None:
    rows = [row(1), row(2, "assistant")]
    slots = [Slot("health", "system", "HP 73", 0, "t")]
    first = build_prompt(
        role_doc="ROLE", transcript=render_transcript(rows), slots=slots, input_text="turn three"
    )
    rows_next = [*rows, row(3), row(4, "assistant")]
    slots_next = [Slot("health", "system", "HP 60", 0, "t2")]
    second = build_prompt(
        role_doc="ROLE",
        transcript=render_transcript(rows_next),
        slots=slots_next,
        input_text="turn five",
    )
    assert first.system == second.system
    n = 1 + first.transcript_rows
    assert strip_cache_markers(first.blocks[:n]) == strip_cache_markers(second.blocks[:n])
    assert json.dumps(strip_cache_markers(first.blocks[:n]), sort_keys=True) == json.dumps(
        strip_cache_markers(second.blocks[:n]), sort_keys=True
    )


def test_same_inputs_give_identical_bytes() -> None:
    rows = [
        row(1),
        row(
            2,
            "assistant",
            {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"z": 1, "a": 2}},
        ),
    ]
    a = build_prompt(role_doc="R", transcript=render_transcript(rows), input_text="x")
    b = build_prompt(role_doc="R", transcript=render_transcript(list(rows)), input_text="x")
    assert body(a) == body(b)
    assert '{"a": 2, "z": 1}' in a.blocks[2]["text"]


def test_layout_head_transcript_marker_then_tail() -> None:
    rows = [row(1), row(2, "assistant")]
    p = build_prompt(
        role_doc="R",
        transcript=render_transcript(rows),
        slots=[Slot("s", "user", "v", 0, "t")],
        manifest="MANIFEST",
        inbox="INBOX",
        input_text="NOW",
    )
    texts = [b["text"] for b in p.blocks]
    assert texts[0] == HEAD_TEXT
    assert texts[-3:] == ["MANIFEST", "INBOX", "NOW"]
    marked = [i for i, b in enumerate(p.blocks) if "cache_control" in b]
    assert marked == [2]  # the last transcript block, before any volatile text
    assert p.system == "R"


def test_every_slot_reaches_the_model_whatever_its_role() -> None:
    slots = [
        Slot(f"s{r}", r, f"value-{r}", i, "t") for i, r in enumerate(["system", "tool", "weird"])
    ]
    p = build_prompt(role_doc="R", transcript=render_transcript([]), slots=slots, input_text="go")
    tail = p.blocks[1]["text"]
    for r in ["system", "tool", "weird"]:
        assert f"value-{r}" in tail


def test_thinking_is_not_resent_and_empty_rows_are_skipped() -> None:
    thinking_only = row(
        1, "assistant", {"type": "thinking", "thinking": "secret", "signature": "s"}
    )
    mixed = row(
        2,
        "assistant",
        {"type": "thinking", "thinking": "hmm", "signature": "s"},
        {"type": "text", "text": "ok"},
    )
    p = build_prompt(
        role_doc="R", transcript=render_transcript([thinking_only, mixed]), input_text="go"
    )
    joined = json.dumps(p.blocks)
    assert "secret" not in joined and "hmm" not in joined
    assert p.transcript_rows == 1
    assert all(b["text"].strip() for b in p.blocks)


def test_interrupted_input_is_marked() -> None:
    p = build_prompt(
        role_doc="R",
        transcript=render_transcript([row(1, status="interrupted")]),
        input_text="again",
    )
    assert "no reply was recorded" in p.blocks[1]["text"]


def test_tool_results_are_rendered_for_the_next_turn() -> None:
    r = row(
        2,
        "assistant",
        {"type": "tool_use", "id": "t1", "name": "Read", "input": {"file_path": "/x"}},
        {"type": "tool_result", "tool_use_id": "t1", "content": "file body", "is_error": False},
    )
    p = build_prompt(role_doc="R", transcript=render_transcript([r]), input_text="go")
    assert "[tool_result for=t1] file body" in p.blocks[1]["text"]


def test_our_marker_carries_the_turns_cache_lifetime() -> None:
    rows = [row(1), row(2, "assistant")]
    lifetimes: list[tuple[CacheTtl, dict[str, str]]] = [
        ("5m", {"type": "ephemeral"}),
        ("1h", {"type": "ephemeral", "ttl": "1h"}),
    ]
    for ttl, marker in lifetimes:
        p = build_prompt(
            role_doc="R", transcript=render_transcript(rows), input_text="go", cache_ttl=ttl
        )
        marked = [b for b in p.blocks if "cache_control" in b]
        assert len(marked) == 1 and marked[0]["cache_control"] == marker
        assert marked[0]["text"].startswith("[row 2 ")  # the last transcript block
