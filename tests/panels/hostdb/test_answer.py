"""The `answer` verb carries the policy's own `Answer`, and stores the same text as ever."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from panels.hostdb import connect, parse_verb, pending_commands, submit_command
from panels.hostdb.verbs import AnswerRequest, VerbError
from runtime.policy.asking import Answer

# What rows in host.sqlite hold for each answer, written by every mnemara so far.
STORED = {"yes": Answer.YES, "no": Answer.NO, "session": Answer.SESSION, "always": Answer.ALWAYS}


def test_a_stored_answer_row_reads_back_as_the_policys_answer(tmp_path: Path) -> None:
    conn = connect(tmp_path / "host.sqlite")
    with conn:  # rows as a viewer wrote them before: the arguments as JSON text
        for value in STORED:
            conn.execute(
                "INSERT INTO commands (ts, panel, verb, args) VALUES (0, 'a', 'answer', ?)",
                (json.dumps({"answer": value, "request": 3}),),
            )
    read = [parse_verb(c.verb, c.panel, c.args) for c in pending_commands(conn)]
    conn.close()
    assert [v.answer for v in read if isinstance(v, AnswerRequest)] == list(STORED.values())
    assert all(type(v.answer) is Answer for v in read if isinstance(v, AnswerRequest))


def test_an_answer_is_stored_as_the_same_text(tmp_path: Path) -> None:
    conn = connect(tmp_path / "host.sqlite")
    for value, answer in STORED.items():
        ident = submit_command(conn, AnswerRequest(panel="a", request=3, answer=answer))
        (args,) = conn.execute("SELECT args FROM commands WHERE id = ?", (ident,)).fetchone()
        assert args == f'{{"answer": "{value}", "request": 3}}'
    conn.close()
    assert AnswerRequest(answer=Answer.SESSION).summary() == "answer='session'"


@pytest.mark.parametrize("bad", ["YES", "maybe", "", 1, None, ["yes"]])
def test_anything_else_is_refused_with_the_answers_named(bad: object) -> None:
    with pytest.raises(VerbError, match="Input should be 'yes', 'no', 'session' or 'always'"):
        parse_verb("answer", "a", {"answer": bad})
