"""`ps`: the first line says what is true of the host, and the panels waiting on the operator
come first, with a line that says so; an answer naming no question, with none open, is
nothing to do. Pure: rows and meta in, lines out."""

from __future__ import annotations

import pytest

from panels.host.control.account import ps_header, table, waiting_first
from panels.host.control.dispatch import Outcome, VerbRefusedError, question_to_answer
from panels.hostdb import PanelRow


@pytest.mark.parametrize(
    ("pid", "meta", "line"),
    [
        (42, {"bus": "/b.sqlite"}, "team t: host running (pid 42); bus /b.sqlite"),
        (42, {}, "team t: host running (pid 42), starting"),
        (None, {"bus": "/b.sqlite"}, "team t: host stopped; bus /b.sqlite"),
        (None, {}, "team t: host not started (no start recorded; /s/host.log says why)"),
    ],
)
def test_the_header_never_guesses_the_bus(pid: int | None, meta: dict[str, str], line: str) -> None:
    assert ps_header("t", pid, meta, "/s/host.log") == line
    assert "?" not in line


def rows(*states: str) -> list[PanelRow]:
    return [PanelRow(f"p{i}", "worker", state) for i, state in enumerate(states)]


def test_panels_waiting_on_the_operator_come_first_in_team_order() -> None:
    ordered = waiting_first(rows("idle", "approval", "thinking", "approval"))
    assert [r.name for r in ordered] == ["p1", "p3", "p0", "p2"]


def test_the_table_says_who_waits_and_how_to_answer() -> None:
    one = table(rows("idle", "approval"), "crew")
    assert one[0] == (
        "waiting on you (listed first): p1 asks to run a tool; "
        "`mnemara approve -t crew -p p1` or `deny` answers"
    )
    assert one[2].startswith("p1 ") and one[3].startswith("p0 ")
    two = table(rows("approval", "approval"), "crew")
    assert "p0, p1 ask to run tools" in two[0] and "-p NAME" in two[0]
    calm = table(rows("idle"), "crew")
    assert calm[0].startswith("panel ") and not any("waiting on you" in line for line in calm)


def test_an_answer_naming_no_question_with_none_open_is_nothing_to_do() -> None:
    assert question_to_answer([7], None) == 7
    nothing = question_to_answer([], "eng")
    assert nothing == Outcome(True, "nothing to answer: no question of eng is waiting")
    with pytest.raises(VerbRefusedError, match=r"2 questions are waiting \(3, 5\); name one"):
        question_to_answer([3, 5], None)
