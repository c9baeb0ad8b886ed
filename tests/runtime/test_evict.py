"""Block eviction keeps the audit shell and drops the bulk."""

from __future__ import annotations

from runtime.window.evict import strip_bulk, strip_thinking, strip_write_pairs, written_paths

BLOCKS = (
    {"type": "thinking", "thinking": "long thought", "signature": "sig"},
    {"type": "text", "text": "editing"},
    {"type": "tool_use", "id": "r1", "name": "Read", "input": {"file_path": "/a.py"}},
    {"type": "tool_result", "tool_use_id": "r1", "content": "x" * 5000, "is_error": False},
    {
        "type": "tool_use",
        "id": "e1",
        "name": "Edit",
        "input": {"file_path": "/a.py", "old_string": "a" * 3000, "new_string": "b" * 3000},
    },
    {"type": "tool_result", "tool_use_id": "e1", "content": "ok", "is_error": False},
)


def test_strip_thinking_keeps_everything_else() -> None:
    out = strip_thinking(BLOCKS)
    assert [b["type"] for b in out] == [b["type"] for b in BLOCKS[1:]]


def test_strip_bulk_keeps_paths_and_drops_bodies() -> None:
    out = strip_bulk(BLOCKS)
    edit = next(b for b in out if b.get("id") == "e1")
    assert edit["input"] == {"file_path": "/a.py", "_evicted": True}
    assert all(b["content"] == "[evicted]" for b in out if b["type"] == "tool_result")
    assert len(str(out)) < len(str(BLOCKS)) // 5
    assert strip_bulk(out) == out  # idempotent


def test_write_pairs_stub_the_edit_and_the_prior_read_of_the_same_file() -> None:
    paths = written_paths(BLOCKS)
    assert paths == {"/a.py"}
    out = strip_write_pairs(BLOCKS, paths)
    read_result = next(b for b in out if b.get("tool_use_id") == "r1")
    assert read_result["content"] == "[evicted]"
    assert out[1] == BLOCKS[1]
