"""Tool results are stored capped, head and tail kept, with a marker saying how much was cut."""

from __future__ import annotations

import pytest

from runtime.store import cap_tool_results, truncate_tool_result


def test_short_text_is_unchanged() -> None:
    assert truncate_tool_result("ok", 10) == "ok"
    assert truncate_tool_result("x" * 100, 100) == "x" * 100


@pytest.mark.parametrize("cap", [200, 1_000, 4_000])
def test_long_text_keeps_head_and_tail_within_the_cap(cap: int) -> None:
    text = "HEAD" + "m" * 50_000 + "TAIL"
    capped = truncate_tool_result(text, cap)
    assert cap - 2 <= len(capped) <= cap, "the whole budget is used, and no more"
    assert capped.startswith("HEAD") and capped.endswith("TAIL")
    assert " chars truncated by mnemara ...]" in capped


def test_marker_reports_the_exact_count() -> None:
    text = "a" * 600 + "b" * 600
    capped = truncate_tool_result(text, 300)
    head, rest = capped.split("\n[... ")
    count, tail = rest.split(" chars truncated by mnemara ...]\n")
    assert len(head) + int(count.replace(",", "")) + len(tail) == len(text)
    assert text.startswith(head) and text.endswith(tail)


def test_a_cap_smaller_than_the_marker_still_cuts() -> None:
    capped = truncate_tool_result("z" * 1_000, 5)
    assert "truncated by mnemara" in capped and len(capped) < 1_000


def test_negative_cap_is_a_programming_error() -> None:
    with pytest.raises(ValueError):
        truncate_tool_result("x", -1)


def test_only_tool_result_text_is_capped() -> None:
    long = "y" * 5_000
    blocks = (
        {"type": "text", "text": long},
        {"type": "tool_use", "id": "t", "name": "Bash", "input": {"command": long}},
        {"type": "tool_result", "tool_use_id": "t", "content": long, "is_error": True},
        {
            "type": "tool_result",
            "tool_use_id": "u",
            "content": [{"type": "text", "text": long}, {"type": "image", "source": {}}],
        },
        {"type": "tool_result", "tool_use_id": "v", "content": "short"},
    )
    capped = cap_tool_results(blocks, 1_000)
    assert capped[0] is blocks[0] and capped[1] is blocks[1] and capped[4] is blocks[4]
    assert len(capped[2]["content"]) <= 1_000 and capped[2]["is_error"] is True
    assert capped[2]["tool_use_id"] == "t"
    assert len(capped[3]["content"][0]["text"]) <= 1_000
    assert capped[3]["content"][1] == {"type": "image", "source": {}}
    assert blocks[2]["content"] == long, "the input blocks are not modified"
