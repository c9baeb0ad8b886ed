"""Escaping for the operator's prompt: nothing hidden, nothing repainted."""

from __future__ import annotations

import pytest

from runtime.policy.display import escape_for_display, has_hidden_characters


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("ls -la", "ls -la"),
        ("a\nb\tc\rd", "a\\nb\\tc\\rd"),
        ("\x1b[2Kclear", "\\x1b[2Kclear"),
        ("r\u200bm", "r\\u200bm"),
        ("\u202etxt.exe", "\\u202etxt.exe"),
        ("\ufeffbom", "\\ufeffbom"),
        ("soft\u00adhyphen", "soft\\xadhyphen"),
        ("tag\U000e0041", "tag\\U000e0041"),
        ("\u3164filler", "\\u3164filler"),
        ("caf\u00e9 \u4e2d", "caf\u00e9 \u4e2d"),
        ("a\\x1b", "a\\x1b"),
    ],
)
def test_hidden_characters_are_escaped(text: str, shown: str) -> None:
    assert escape_for_display(text) == shown


def test_has_hidden_characters() -> None:
    assert has_hidden_characters("a\u200cb")
    assert not has_hidden_characters("plain text, caf\u00e9")


def test_long_text_is_shortened_with_a_count() -> None:
    assert escape_for_display("x" * 30, max_chars=10) == "x" * 10 + "... [20 more characters]"
