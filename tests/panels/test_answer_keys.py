"""One key map for both faces: a key gives the same answer in the REPL and the dashboard."""

from __future__ import annotations

import pytest

from panels.repl.approve import parse_answer
from panels.ui.approvals import Question
from panels.ui.modals import ApprovalScreen
from runtime.policy.asking import ANSWER_KEYS, Answer


def question(*, always: bool) -> Question:
    return Question("a", 1, "Bash", "make build", "Bash asks", always_offered=always)


def test_the_keys_are_y_n_s_and_a() -> None:
    assert ANSWER_KEYS == {"y": Answer.YES, "n": Answer.NO, "s": Answer.SESSION, "a": Answer.ALWAYS}


def test_each_key_gives_the_same_answer_in_both_faces() -> None:
    for key, answer in ANSWER_KEYS.items():
        assert parse_answer(f" {key.upper()} ", always_offered=True) is answer  # the REPL
        assert parse_answer(answer.value, always_offered=True) is answer  # or the whole word
        assert question(always=True).answers()[key] is answer  # the dashboard's buttons
    keys = [(b.key, b.action, b.description) for b in ApprovalScreen.BINDINGS]  # its keys
    assert keys == [
        ("y", "answer('yes')", "Yes"),
        ("n", "answer('no')", "No"),
        ("s", "answer('session')", "This session"),
        ("a", "answer('always')", "Always"),
    ]


def test_always_is_answered_only_when_offered() -> None:
    assert parse_answer("a", always_offered=False) is None
    assert parse_answer("always", always_offered=False) is None
    assert parse_answer("maybe", always_offered=True) is None
    assert list(question(always=False).answers()) == ["y", "n", "s"]


def test_both_faces_read_the_one_map(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(ANSWER_KEYS, "o", Answer.YES)  # a key added to the map...
    assert parse_answer("o", always_offered=False) is Answer.YES  # ...is the REPL's
    assert question(always=False).answers()["o"] is Answer.YES  # ...and the dashboard's
