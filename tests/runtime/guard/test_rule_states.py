"""When two states are the same for the sentinel's rules, what changed between them and who
changed it, and how much waiting a loop is allowed (runtime/guard/rules.py)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from runtime.guard.records import CallEvidence
from runtime.guard.rules import (
    Change,
    Patience,
    Seen,
    State,
    changed_components,
    own_changes,
    same_state,
    waited_in,
)

BEFORE = State(files={"/w/a": "1", "/w/b": "1"}, git="g1", tests={"t": "pass"})


@pytest.mark.parametrize(
    ("a", "b", "own", "excused", "same"),
    [
        # the same measurements, in distinct objects
        (BEFORE, State(dict(BEFORE.files), "g1", {"t": "pass"}), "", frozenset(), True),
        # a file or a test measured in only one of them was first seen later: no difference
        (BEFORE, State({"/w/a": "1"}, "g1", {"t": "pass"}), "", frozenset(), True),
        (BEFORE, State({**BEFORE.files, "/w/c": "9"}, "g1", {}), "", frozenset(), True),
        (State(), BEFORE, "", frozenset(), True),
        (State({"/w/a": "1", "/w/b": "1"}), State({"/w/a": "1", "/w/c": "2"}), "", frozenset(),
         True),
        (State(tests={"t": "x", "u": "y"}), State(tests={"t": "x", "v": "z"}), "", frozenset(),
         True),
        # a file that differs, whichever state has more files
        (BEFORE, State({"/w/a": "2"}, "g1"), "", frozenset(), False),
        (State({"/w/a": "2"}, "g1"), BEFORE, "", frozenset(), False),
        (State({"/w/a": "1", "/w/b": "2"}), State({"/w/a": "1", "/w/b": "1"}), "", frozenset(),
         False),
        # ... unless only the judged call changed it
        (BEFORE, State({"/w/a": "2"}, "g1"), "", frozenset({"/w/a"}), True),
        (BEFORE, State({"/w/a": "2"}, "g1"), "", frozenset({"/w/b", "git"}), False),
        # the git state: different when both measured it, unless only the call moved it
        (BEFORE, State(BEFORE.files, "g2"), "", frozenset(), False),
        (BEFORE, State(BEFORE.files, "g2"), "", frozenset({"git"}), True),
        (BEFORE, State(BEFORE.files, None), "", frozenset(), True),
        (State(git=None), State(git="g2"), "", frozenset(), True),
        # a test whose outcome changed
        (BEFORE, State(BEFORE.files, "g1", {"t": "fail"}), "", frozenset(), False),
        (State(tests={"t": "fail", "u": "x"}), State(tests={"t": "pass"}), "", frozenset(), False),
        # the changes assumed while the world is not measured
        (State(epoch=1), State(epoch=2), "", frozenset(), False),
        (State(epoch=1, files={"/w/a": "1"}), State(epoch=1, files={"/w/a": "1"}), "",
         frozenset(), True),
        # opaque commands: another's success is a change, the judged call's own is not
        (State(opaque=frozenset({"pip"})), State(), "", frozenset(), False),
        (State(opaque=frozenset({"pip"})), State(), "pip", frozenset(), True),
        (State(), State(opaque=frozenset({"pip"})), "pip", frozenset(), True),
        (State(opaque=frozenset({"pip", "npm"})), State(opaque=frozenset({"pip"})), "pip",
         frozenset(), False),
        (State(opaque=frozenset({"pip"})), State(opaque=frozenset({"pip"})), "", frozenset(),
         True),
    ],
)  # fmt: skip
def test_two_states_agree_on_everything_both_measured(
    a: State, b: State, own: str, excused: frozenset[str], same: bool
) -> None:
    assert same_state(a, b, own, excused) is same


def test_one_state_and_states_sharing_their_files_are_the_same() -> None:
    files = {"/w/a": "1"}
    state = State(files, "g1", {"t": "pass"})
    assert same_state(state, state) is True
    assert same_state(State(files, "g1"), State(files, "g1")) is True
    assert same_state(State(files, epoch=1), State(files, epoch=2)) is False


def test_a_difference_outside_the_files_is_seen_even_when_the_files_are_shared() -> None:
    files = {"/w/a": "1"}
    assert same_state(State(files, "g1"), State(files, "g2")) is False
    assert same_state(State(files, tests={"t": "a"}), State(files, tests={"t": "b"})) is False


LOG: list[Change] = [
    (2, "/w/a", frozenset({"append"})),
    (3, "git", frozenset({"commit"})),
    (4, "/w/b", frozenset({"append", "commit"})),
    (5, "/w/c", frozenset({"append"})),
    (6, "/w/c", frozenset({"other"})),
]


@pytest.mark.parametrize(
    ("start", "end", "own", "changed"),
    [
        (1, 2, "append", {"/w/a"}),
        (2, 2, "append", set()),  # the change before call 2 is not after call 2
        (1, 1, "append", set()),  # ... nor before call 1
        (1, 3, "append", {"/w/a"}),
        (1, 3, "commit", {"git"}),
        (1, 4, "append", {"/w/a"}),  # made with another call: not its own
        (1, 5, "append", {"/w/a", "/w/c"}),
        (1, 6, "append", {"/w/a"}),  # changed again by another call
        (5, 6, "other", {"/w/c"}),
        (0, 6, "nobody", set()),
    ],
)
def test_own_changes_are_what_only_that_call_changed_between_two_calls(
    start: int, end: int, own: str, changed: set[str]
) -> None:
    assert own_changes(LOG, start, end, own) == changed


@pytest.mark.parametrize(
    ("before", "after", "changed"),
    [
        (State(git="g1"), State(git="g2"), {"git"}),
        (State(git="g1"), State(git="g1"), set()),
        (State(git=None), State(git="g2"), set()),
        (State(git="g1"), State(git=None), set()),
        (State({"/w/a": "1", "/w/b": "1"}), State({"/w/a": "2", "/w/b": "1"}), {"/w/a"}),
        (State({"/w/a": "1"}), State({"/w/a": "1", "/w/new": "1"}), set()),  # first seen
        (State({"/w/a": "1", "/w/gone": "1"}), State({"/w/a": "1"}), set()),  # not measured
        (State({"/w/a": "1"}, "g1"), State({"/w/a": "2"}, "g2"), {"/w/a", "git"}),
    ],
)
def test_changed_components_are_git_and_the_files_measured_both_times(
    before: State, after: State, changed: set[str]
) -> None:
    assert changed_components(before, after) == changed


def test_states_sharing_their_files_changed_no_file() -> None:
    files = {"/w/a": "1"}
    assert changed_components(State(files, "g1"), State(files, "g1")) == set()


def waiting(*seconds: float | None, waits: bool = True) -> list[Seen]:
    return [
        Seen(
            key="sleep",
            seq=n,
            state=State(),
            evidence=CallEvidence(f"toolu_{n}", "Bash", "sleep"),
            effect="read",
            waits=waits,
            seconds=s,
        )
        for n, s in enumerate(seconds, 1)
    ]


def test_only_calls_that_wait_count_as_waiting() -> None:
    assert waited_in([*waiting(10.0, None, 2.5), *waiting(100.0, waits=False)]) == 12.5
    assert waited_in([]) == 0


@pytest.mark.parametrize(
    ("span", "rounds", "excused"),
    [
        (waiting(30.0, 30.0), 2, True),  # exactly 30 s a round
        (waiting(30.0, 29.5), 2, False),  # a tight poll
        (waiting(60.0), 2, True),
        (waiting(60.0), 0, False),  # no round to excuse
        (waiting(1799.0), 1, True),
        (waiting(1800.0), 1, False),  # the budget is spent
        (waiting(900.0, 900.0), 2, False),
        (waiting(100.0, waits=False), 1, False),
    ],
)
def test_patience_by_default_is_30_s_a_round_until_1800_s_were_waited(
    span: Sequence[Seen], rounds: int, excused: bool
) -> None:
    assert Patience().excuses(span, rounds) is excused


@pytest.mark.parametrize(
    ("per_round", "budget", "seconds", "rounds", "excused"),
    [
        (5.0, 100.0, 10.0, 2, True),
        (5.0, 100.0, 9.0, 2, False),
        (5.0, 100.0, 100.0, 1, False),
        (5.0, 100.0, 99.0, 1, True),
        (0.0, 100.0, 0.0, 1, True),  # every round is patient, until the budget
    ],
)
def test_patience_takes_its_round_and_budget_as_given(
    per_round: float, budget: float, seconds: float, rounds: int, excused: bool
) -> None:
    patience = Patience(per_round=per_round, budget=budget)
    assert patience.excuses(waiting(seconds), rounds) is excused
