"""Each of the sentinel's rules fires exactly at its threshold and not one call earlier, says
in full what it saw, and sees what changed in between (runtime/guard/rules.py)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from runtime.guard.records import CallEvidence
from runtime.guard.rules import (
    Change,
    Fired,
    Patience,
    Seen,
    State,
    alternation,
    failing,
    repeat,
    same_error,
    same_observation,
)

OLD = State(files={"/w/f": "1"})
NEW = State(files={"/w/f": "2"})
STILL = "with the same arguments"


class Turn:
    """The calls of one turn, numbered as the sentinel numbers them (from 1)."""

    def __init__(self) -> None:
        self.calls: list[Seen] = []

    def add(self, key: str, **fields: Any) -> Seen:
        call = self.next(key, **fields)
        self.calls.append(call)
        return call

    def next(self, key: str, *, state: State = OLD, **fields: Any) -> Seen:
        """The next call, not yet in the turn: its name is the key's first word."""
        seq = len(self.calls) + 1
        name = key.split()[0]
        evidence = CallEvidence(f"toolu_{seq}", name, key)
        fields.setdefault("effect", "read")
        return Seen(key=key, seq=seq, state=state, evidence=evidence, **fields)


def ids(fired: Fired | None) -> list[str]:
    assert fired is not None
    return [c.tool_use_id for c in fired[2]]


def message(fired: Fired | None) -> tuple[str, str]:
    assert fired is not None
    return fired[0], fired[1]


# -- repeat ---------------------------------------------------------------------------------


def polls(*outcomes: str | None, waited: float | None = None) -> Turn:
    turn = Turn()
    for outcome in outcomes:
        turn.add("Bash curl ci", outcome=outcome, waits=waited is not None, seconds=waited)
    return turn


def test_repeat_says_how_often_the_call_ran_within_the_window() -> None:
    turn = polls("running", "running")
    fired = repeat(turn.calls, turn.next("Bash curl ci"), window=8, threshold=3)
    assert message(fired) == (
        "repeat",
        "Bash called 3 times with the same arguments in the last 8 calls, with the same "
        "result and nothing changed in between; the last call was stopped before it ran",
    )
    assert ids(fired) == ["toolu_1", "toolu_2", "toolu_3"]


@pytest.mark.parametrize(
    ("waited", "suffix"),
    [
        (6.3, " (13 s spent waiting)"),
        (0.5, " (1 s spent waiting)"),  # exactly one second
        (0.45, ""),  # under a second is not worth saying
    ],
)
def test_repeat_says_how_long_the_loop_waited(waited: float, suffix: str) -> None:
    turn = polls("running", "running", waited=waited)
    fired = repeat(turn.calls, turn.next("Bash curl ci"), window=8, threshold=3)
    assert message(fired)[1] == (
        f"Bash called 3 times {STILL} in the last 8 calls, with the same result and nothing "
        f"changed in between{suffix}; the last call was stopped before it ran"
    )


@pytest.mark.parametrize(
    ("window", "threshold", "times"),
    [
        (4, 3, 3),  # the first call is just inside the window's 3 earlier calls
        (3, 3, None),  # ... and just outside a window of 3
        (4, 4, None),  # one call short of the threshold
        (2, 2, 2),  # the smallest window sees the call before
        (1, 2, None),  # a window of one call holds the candidate alone
    ],
)
def test_repeat_counts_the_calls_of_the_window_only(
    window: int, threshold: int, times: int | None
) -> None:
    turn = Turn()
    for key in ("Bash curl ci", "Read notes", "Bash curl ci"):
        turn.add(key, outcome="running")
    fired = repeat(turn.calls, turn.next("Bash curl ci"), window=window, threshold=threshold)
    if times is None:
        assert fired is None
    else:
        assert message(fired)[1].startswith(f"Bash called {times} times {STILL} in the last "
                                            f"{window} calls")  # fmt: skip


@pytest.mark.parametrize(
    ("outcomes", "evidence"),
    [
        (("running", "done"), None),  # its result changed: it starts again from the change
        (("running", "done", "done"), ["toolu_2", "toolu_3", "toolu_4"]),
        (("a", None, "a"), ["toolu_1", "toolu_2", "toolu_3", "toolu_4"]),  # unknown agrees
        (("a", None, "b"), ["toolu_2", "toolu_3", "toolu_4"]),
        (("a", None, "b", "c"), None),
    ],
)
def test_a_repeat_is_counted_from_its_last_change_of_result(
    outcomes: tuple[str | None, ...], evidence: list[str] | None
) -> None:
    turn = polls(*outcomes)
    fired = repeat(turn.calls, turn.next("Bash curl ci"), window=8, threshold=3)
    if evidence is None:
        assert fired is None
    else:
        assert ids(fired) == evidence


@pytest.mark.parametrize(
    ("log", "fires"),
    [
        ([], False),  # the file changed: progress
        ([(2, "/w/f", frozenset({"Bash append"}))], True),  # by the call itself
        ([(2, "/w/f", frozenset({"Edit f"}))], False),  # by another call
        ([(2, "/w/f", frozenset({"Bash append", "Edit f"}))], False),
        ([(2, "git", frozenset({"Bash append"}))], False),  # its own change was elsewhere
    ],
)
def test_a_repeat_is_excused_only_by_what_another_call_changed(
    log: list[Change], fires: bool
) -> None:
    turn = Turn()
    turn.add("Bash append", state=OLD, outcome="ok")
    turn.add("Bash append", state=NEW, outcome="ok")
    fired = repeat(turn.calls, turn.next("Bash append", state=NEW), window=8, threshold=3, log=log)
    assert (fired is not None) is fires


@pytest.mark.parametrize(
    ("seconds", "fires"),
    [(30.0, False), (29.9, True)],  # two rounds of a patient poll wait 60 s
)
def test_a_poll_with_sleeps_in_between_is_patient(seconds: float, fires: bool) -> None:
    turn = Turn()
    turn.add("Bash sleep", waits=True, seconds=1000.0, outcome="")  # before the loop: not its
    for _ in range(2):
        turn.add("Bash curl ci", outcome="running")
        turn.add("Bash sleep", waits=True, seconds=seconds, outcome="")
    fired = repeat(turn.calls, turn.next("Bash curl ci"), window=8, threshold=3)
    assert (fired is not None) is fires


def test_a_repeats_wait_budget_is_spent_over_the_whole_loop_not_the_window() -> None:
    for seconds, fires in ((700.0, True), (500.0, False)):
        turn = polls("running", "running", "running", waited=seconds)
        fired = repeat(turn.calls, turn.next("Bash curl ci"), window=3, threshold=3)
        if fires:
            assert message(fired)[1] == (
                f"Bash called 3 times {STILL} in the last 3 calls, with the same result and "
                "nothing changed in between (2100 s spent waiting); the last call was stopped "
                "before it ran"
            )
            assert ids(fired) == ["toolu_2", "toolu_3", "toolu_4"]
        else:
            assert fired is None


def test_a_repeat_uses_the_patience_given() -> None:
    turn = polls("running", "running", waited=5.0)
    candidate = turn.next("Bash curl ci")
    assert repeat(turn.calls, candidate, window=8, threshold=3) is not None
    quick = Patience(per_round=5.0, budget=100.0)
    assert repeat(turn.calls, candidate, window=8, threshold=3, patience=quick) is None


# -- alternation ----------------------------------------------------------------------------


def cycle(keys: Sequence[str], **fields: Any) -> Turn:
    turn = Turn()
    for key in keys:
        turn.add(key, **fields)
    return turn


SAME = ("with the same results and nothing changed from one cycle to the next; the last call "
        "was stopped before it ran")  # fmt: skip


@pytest.mark.parametrize(
    ("keys", "candidate", "cycles", "longest", "said"),
    [
        (["Grep z", "Read a", "Bash ls", "Read a"], "Bash ls", 2, 6,
         "two calls (Read / Bash) alternated 2 times"),
        (["Read a", "Bash ls", "Read a", "Bash ls", "Read a"], "Bash ls", 3, 6,
         "two calls (Read / Bash) alternated 3 times"),
        # a cycle that starts with a repeated call
        (["Read a", "Read a", "Bash ls", "Read a", "Read a"], "Bash ls", 2, 6,
         "a cycle of 3 calls (Read / Read / Bash) ran 2 times"),
        (["Read a", "Grep x", "Bash ls", "Read a", "Grep x"], "Bash ls", 2, 3,
         "a cycle of 3 calls (Read / Grep / Bash) ran 2 times"),
        # ... and one whose last call comes first again: no cycle of two, one of three
        (["Read a", "Bash ls", "Read a", "Read a", "Bash ls"], "Read a", 2, 6,
         "a cycle of 3 calls (Read / Bash / Read) ran 2 times"),
        # one round is any two different calls in a row (why the settings refuse it)
        (["Read a"], "Bash ls", 1, 6, "two calls (Read / Bash) alternated 1 times"),
    ],
)  # fmt: skip
def test_alternation_names_the_cycle_and_how_often_it_ran(
    keys: list[str], candidate: str, cycles: int, longest: int, said: str
) -> None:
    turn = cycle(keys, outcome="same")
    fired = alternation(turn.calls, turn.next(candidate), cycles=cycles, longest=longest)
    assert message(fired) == ("alternation", f"{said} {SAME}")
    first = 2 if keys[0] == "Grep z" else 1  # a call before the cycle is not evidence
    assert ids(fired) == [f"toolu_{n}" for n in range(first, len(keys) + 2)]


@pytest.mark.parametrize(
    ("keys", "candidate", "cycles", "longest"),
    [
        (["Read a", "Bash ls"], "Read a", 2, 6),  # one call short
        (["Read a", "Bash ls", "Read a"], "Bash ls", 0, 6),  # off
        (["Read a", "Bash ls", "Read a"], "Bash ls", 3, 6),  # one cycle short of 3
        (["Read a", "Grep x", "Bash ls", "Read a", "Grep x"], "Bash ls", 2, 2),  # too long
        (["Read a", "Read a", "Read a"], "Read a", 2, 6),  # one call repeated: a repeat
        (["Read a"] * 5, "Read a", 2, 3),
        (["Read a", "Bash ls", "Read a"], "Grep x", 2, 6),
        (["Bash ls", "Read a", "Grep x"], "Read a", 2, 6),
    ],
)
def test_no_alternation_short_of_a_whole_cycle_repeated(
    keys: list[str], candidate: str, cycles: int, longest: int
) -> None:
    turn = cycle(keys, outcome="same")
    assert alternation(turn.calls, turn.next(candidate), cycles=cycles, longest=longest) is None


@pytest.mark.parametrize(
    ("outcomes", "fires"),
    [
        (("x", "y", "x"), True),
        (("x", "y", "z"), False),  # the first call's result changed
        (("x", None, "x"), True),  # a result not yet seen agrees
        ((None, "y", "z"), True),
    ],
)
def test_alternation_needs_the_same_results_one_cycle_apart(
    outcomes: tuple[str | None, ...], fires: bool
) -> None:
    turn = Turn()
    for key, outcome in zip(("Read a", "Bash ls", "Read a"), outcomes, strict=True):
        turn.add(key, outcome=outcome)
    fired = alternation(turn.calls, turn.next("Bash ls"), cycles=2, longest=6)
    assert (fired is not None) is fires


@pytest.mark.parametrize(
    ("log", "fires"),
    [
        ([], False),  # the edit changed the file: progress
        ([(2, "/w/f", frozenset({"Edit f"}))], True),  # ... the same rewrite each round after
        ([(2, "/w/f", frozenset({"Bash check"}))], False),
        ([(2, "/w/f", frozenset({"Edit f", "Bash check"}))], False),
    ],
)
def test_alternation_leaves_out_only_what_each_call_changed_itself(
    log: list[Change], fires: bool
) -> None:
    turn = Turn()
    turn.add("Edit f", state=OLD, outcome="ok")
    turn.add("Bash check", state=NEW, outcome="fail")
    turn.add("Edit f", state=NEW, outcome="ok")
    fired = alternation(turn.calls, turn.next("Bash check", state=NEW), cycles=2, longest=6,
                        log=log)  # fmt: skip
    assert (fired is not None) is fires


def waiting_cycle(rounds: int, seconds: float, *, before: float | None = None) -> Turn:
    """A status check that waits and a look at the log, `rounds` times less the last look."""
    turn = Turn()
    if before is not None:
        turn.add("Bash sleep", waits=True, seconds=before, outcome="")
    for n in range(rounds):
        turn.add("Bash status", waits=True, seconds=seconds, outcome="pending")
        if n < rounds - 1:
            turn.add("Read log", outcome="same")
    return turn


@pytest.mark.parametrize(
    ("rounds", "seconds", "said"),
    [
        (2, 15.0, None),  # 30 s waited in one round before this one: patient
        (2, 14.9, " (30 s spent waiting)"),
        (3, 20.0, None),  # 60 s in two rounds
        (3, 19.9, " (60 s spent waiting)"),
        (3, 500.0, None),
        (3, 700.0, " (2100 s spent waiting)"),  # the budget is spent over the whole loop
    ],
)
def test_a_cycle_that_waits_is_patient_until_its_budget_is_spent(
    rounds: int, seconds: float, said: str | None
) -> None:
    turn = waiting_cycle(rounds, seconds)
    fired = alternation(turn.calls, turn.next("Read log", outcome=None), cycles=2, longest=6)
    if said is None:
        assert fired is None
    else:
        assert message(fired)[1] == f"two calls (Bash / Read) alternated 2 times {SAME}{said}"


def test_a_cycles_wait_is_counted_from_where_the_cycle_began() -> None:
    # 1000 s slept before the cycle began are not the cycle's: 3 x 400 s is within budget.
    turn = waiting_cycle(3, 400.0, before=1000.0)
    assert alternation(turn.calls, turn.next("Read log"), cycles=2, longest=6) is None
    turn = waiting_cycle(3, 650.0, before=1000.0)
    fired = alternation(turn.calls, turn.next("Read log"), cycles=2, longest=6)
    assert message(fired)[1].endswith(f"{SAME} (1950 s spent waiting)")


@pytest.mark.parametrize(("seconds", "said"), [(15.0, None), (14.9, " (30 s spent waiting)")])
def test_a_cycle_begun_halfway_counts_its_whole_rounds(seconds: float, said: str | None) -> None:
    # Read, status, read, status, and now the read: one whole round before this one.
    turn = Turn()
    for _ in range(2):
        turn.add("Read log", outcome="same")
        turn.add("Bash status", waits=True, seconds=seconds, outcome="pending")
    fired = alternation(turn.calls, turn.next("Read log"), cycles=2, longest=6)
    if said is None:
        assert fired is None
    else:
        assert message(fired)[1] == f"two calls (Bash / Read) alternated 2 times {SAME}{said}"


def test_a_cycle_is_followed_back_through_its_own_changes() -> None:
    # The status check writes its cache the first time: a change of its own, not progress.
    turn = Turn()
    turn.add("Bash status", state=OLD, waits=True, seconds=700.0, outcome="pending")
    for _ in range(2):
        turn.add("Read log", state=NEW, outcome="same")
        turn.add("Bash status", state=NEW, waits=True, seconds=700.0, outcome="pending")
    log: list[Change] = [(2, "/w/f", frozenset({"Bash status"}))]
    fired = alternation(turn.calls, turn.next("Read log", state=NEW), cycles=2, longest=6,
                        log=log)  # fmt: skip
    assert message(fired)[1].endswith(f"{SAME} (2100 s spent waiting)")


def test_a_cycle_is_followed_back_one_copy_at_a_time() -> None:
    # Each call agrees with its copy one cycle earlier (a result not yet seen agrees with any):
    # the first status with the second, the second with the third, though not the first with
    # the third. The whole loop waited 2100 s.
    turn = Turn()
    for outcome in ("a", None, "b"):
        turn.add("Bash status", waits=True, seconds=700.0, outcome=outcome)
        turn.add("Read log", outcome="same")
    del turn.calls[-1]
    fired = alternation(turn.calls, turn.next("Read log"), cycles=2, longest=6)
    assert message(fired)[1].endswith(f"{SAME} (2100 s spent waiting)")


def test_a_shorter_cycle_given_patience_does_not_hide_a_longer_one() -> None:
    # Status, read: the last rounds waited 900 s, patient. The cycle of four reaches back to
    # the first status (its copy is four calls on), with the 1000 s wait: the budget is spent.
    turn = Turn()
    for read_outcome, status_seconds in (("b", 1000.0), ("a", 300.0), ("b", 300.0), (None, 300.0)):
        turn.add("Read log", outcome=read_outcome)
        turn.add("Bash status", waits=True, seconds=status_seconds, outcome="pending")
    fired = alternation(turn.calls, turn.next("Read log"), cycles=2, longest=6)
    assert message(fired)[1] == (
        f"a cycle of 4 calls (Bash / Read / Bash / Read) ran 2 times {SAME} (1900 s spent waiting)"
    )


def test_alternation_uses_the_patience_given() -> None:
    turn = waiting_cycle(2, 5.0)
    candidate = turn.next("Read log")
    assert alternation(turn.calls, candidate, cycles=2, longest=6) is not None
    quick = Patience(per_round=10.0, budget=100.0)
    assert alternation(turn.calls, candidate, cycles=2, longest=6, patience=quick) is None


# -- failing --------------------------------------------------------------------------------


def failures(*signatures: Sequence[str], outcome: str = "boom", **fields: Any) -> Turn:
    turn = Turn()
    for signature in signatures:
        turn.add("Bash pytest", failed=True, outcome=outcome, signature=frozenset(signature),
                 **fields)  # fmt: skip
    return turn


def test_failing_says_how_often_the_call_failed_the_same_way() -> None:
    turn = failures(["E1"], ["E1"])
    fired = failing(turn.calls, turn.next("Bash pytest"), threshold=3)
    assert message(fired) == (
        "failing",
        "Bash already failed 2 times with the same arguments and the same error, and nothing "
        "changed since; the next attempt was stopped before it ran",
    )
    assert ids(fired) == ["toolu_1", "toolu_2", "toolu_3"]


@pytest.mark.parametrize(
    ("count", "threshold", "evidence"),
    [
        (2, 3, ["toolu_1", "toolu_2", "toolu_3"]),
        (1, 3, None),  # one failure short
        (5, 4, ["toolu_3", "toolu_4", "toolu_5", "toolu_6"]),  # the last three of five
        (3, 0, None),  # off
        (1, 2, ["toolu_1", "toolu_2"]),
    ],
)
def test_failing_fires_at_its_threshold(
    count: int, threshold: int, evidence: list[str] | None
) -> None:
    turn = failures(*[["E1"]] * count)
    fired = failing(turn.calls, turn.next("Bash pytest"), threshold=threshold)
    if evidence is None:
        assert fired is None
    else:
        assert ids(fired) == evidence
        assert f"failed {len(evidence) - 1} times" in message(fired)[1]


@pytest.mark.parametrize(
    ("signatures", "outcomes", "fires"),
    [
        ([["E1"], ["E2"], ["E2"]], ["a", "b", "c"], True),  # the last two share an error
        ([["E2"], ["E2"], ["E1"]], ["a", "a", "a"], False),
        ([["E1", "E2"], ["E2", "E3"]], ["a", "b"], True),
        ([[], []], ["a", "a"], True),  # no error lines: the whole result, the same
        ([[], []], ["a", "b"], False),
        ([["E1"], []], ["a", "a"], True),
        ([["E1"], []], ["a", "b"], False),
    ],
)
def test_failing_needs_the_same_error_each_time(
    signatures: list[list[str]], outcomes: list[str], fires: bool
) -> None:
    turn = Turn()
    for signature, outcome in zip(signatures, outcomes, strict=True):
        turn.add("Bash pytest", failed=True, outcome=outcome, signature=frozenset(signature))
    fired = failing(turn.calls, turn.next("Bash pytest"), threshold=3)
    assert (fired is not None) is fires


def test_failing_counts_only_the_calls_failures() -> None:
    turn = Turn()
    turn.add("Bash pytest", failed=False, outcome="ok")
    turn.add("Bash pytest", failed=None)  # its result not seen yet
    turn.add("Bash make", failed=True, outcome="boom", signature=frozenset({"E1"}))
    turn.add("Bash pytest", failed=True, outcome="boom", signature=frozenset({"E1"}))
    assert failing(turn.calls, turn.next("Bash pytest"), threshold=3) is None
    turn.add("Bash pytest", failed=True, outcome="boom", signature=frozenset({"E1"}))
    assert ids(failing(turn.calls, turn.next("Bash pytest"), threshold=3)) == [
        "toolu_4",
        "toolu_5",
        "toolu_6",
    ]


@pytest.mark.parametrize(
    ("log", "fires"),
    [
        ([], False),  # the file changed since the first failure: worth another try
        ([(2, "/w/f", frozenset({"Bash pytest"}))], True),  # the test run wrote it itself
        ([(2, "/w/f", frozenset({"Edit f"}))], False),
    ],
)
def test_failing_is_rearmed_only_by_what_other_calls_changed(
    log: list[Change], fires: bool
) -> None:
    turn = Turn()
    turn.add("Bash pytest", state=OLD, failed=True, outcome="boom", signature=frozenset({"E"}))
    turn.add("Bash pytest", state=NEW, failed=True, outcome="boom", signature=frozenset({"E"}))
    fired = failing(turn.calls, turn.next("Bash pytest", state=NEW), threshold=3, log=log)
    assert (fired is not None) is fires


@pytest.mark.parametrize(
    ("first_wait", "wait", "fires"),
    [
        (30.0, 30.0, False),  # two retries that backed off 30 s each
        (30.0, 29.0, True),
        (1000.0, 20.0, True),  # the wait before the last two failures is not theirs
    ],
)
def test_retries_that_back_off_have_patience(first_wait: float, wait: float, fires: bool) -> None:
    turn = Turn()
    for seconds in (first_wait, wait, wait):
        turn.add("Bash pytest", failed=True, outcome="boom", signature=frozenset({"E"}))
        turn.add("Bash sleep", waits=True, seconds=seconds, outcome="")
    fired = failing(turn.calls, turn.next("Bash pytest"), threshold=3)
    assert (fired is not None) is fires


def test_failing_uses_the_patience_given() -> None:
    turn = failures(["E"], ["E"], waits=True, seconds=5.0)
    candidate = turn.next("Bash pytest")
    assert failing(turn.calls, candidate, threshold=3) is not None
    quick = Patience(per_round=5.0, budget=100.0)
    assert failing(turn.calls, candidate, threshold=3, patience=quick) is None


# -- the same error, whichever call ---------------------------------------------------------


def errors(*calls: tuple[str, Sequence[str]], **fields: Any) -> Turn:
    """Failed calls, the last one the latest (already in the turn, as the sentinel has it)."""
    turn = Turn()
    for key, signature in calls:
        turn.add(key, failed=True, outcome=key, signature=frozenset(signature), **fields)
    return turn


def test_the_same_error_names_the_tools_that_brought_it_back() -> None:
    turn = errors(("Bash pytest", ["E"]), ("Read out", ["E"]), ("Bash make", ["E"]))
    fired = same_error(turn.calls, turn.calls[-1], threshold=3)
    assert message(fired) == (
        "failing",
        "the same error came back 3 times (Bash, Read) with nothing changed in between, "
        "whichever way it was asked; the next call was stopped before it ran",
    )
    assert ids(fired) == ["toolu_1", "toolu_2", "toolu_3"]


@pytest.mark.parametrize(
    ("calls", "threshold", "evidence"),
    [
        ([("Bash a", ["E"])], 2, None),  # the latest is not its own earlier failure
        ([("Bash a", ["E"]), ("Bash b", ["E"])], 2, ["toolu_1", "toolu_2"]),
        ([("Bash a", ["E"]), ("Bash b", ["E"])], 3, None),  # one short
        ([("Bash a", ["E"]), ("Bash b", ["E"])], 0, None),  # off
        ([("Bash a", ["E"])] * 4, 3, ["toolu_2", "toolu_3", "toolu_4"]),  # the nearest ones
        ([("Bash a", ["E"]), ("Bash b", ["F"]), ("Bash c", ["E"])], 3, None),
        ([("Bash a", ["E"]), ("Bash b", []), ("Bash c", ["E"])], 3, None),
        # the error they share narrows: x and y share nothing, though each shares with the last
        ([("Bash a", ["X"]), ("Bash b", ["Y"]), ("Bash c", ["X", "Y"])], 3, None),
        ([("Bash a", ["Y"]), ("Bash b", ["X", "Y"]), ("Bash c", ["X"])], 3, None),
        ([("Bash a", ["Y"]), ("Bash b", ["Y"]), ("Bash c", ["X", "Y"])], 3,
         ["toolu_1", "toolu_2", "toolu_3"]),
    ],
)  # fmt: skip
def test_the_same_error_fires_at_its_threshold(
    calls: list[tuple[str, list[str]]], threshold: int, evidence: list[str] | None
) -> None:
    turn = errors(*calls)
    fired = same_error(turn.calls, turn.calls[-1], threshold=threshold)
    if evidence is None:
        assert fired is None
    else:
        assert ids(fired) == evidence
        assert f"came back {len(evidence)} times" in message(fired)[1]


def test_the_same_error_is_judged_only_after_a_failure_with_error_lines() -> None:
    turn = errors(("Bash a", ["E"]), ("Bash b", ["E"]))
    turn.add("Bash c", failed=False, outcome="ok", signature=frozenset({"E"}))
    assert same_error(turn.calls, turn.calls[-1], threshold=3) is None
    turn = errors(("Bash a", ["E"]), ("Bash b", ["E"]), ("Bash c", []))
    assert same_error(turn.calls, turn.calls[-1], threshold=3) is None
    turn = errors(("Bash a", ["E"]), ("Bash b", ["E"]))
    turn.add("Bash c", failed=None, signature=frozenset({"E"}))
    assert same_error(turn.calls, turn.calls[-1], threshold=3) is None


def test_a_successful_call_with_the_error_in_its_output_is_not_a_failure() -> None:
    turn = errors(("Bash a", ["E"]))
    turn.add("Bash b", failed=False, signature=frozenset({"E"}))
    turn.add("Bash c", failed=True, signature=frozenset({"E"}))
    assert same_error(turn.calls, turn.calls[-1], threshold=3) is None


@pytest.mark.parametrize(
    ("log", "fires"),
    [
        ([], False),
        ([(2, "/w/f", frozenset({"Bash make"}))], True),
        ([(2, "/w/f", frozenset({"Edit f"}))], False),
    ],
)
def test_the_same_error_is_rearmed_only_by_what_other_calls_changed(
    log: list[Change], fires: bool
) -> None:
    turn = Turn()
    turn.add("Bash make", state=OLD, failed=True, signature=frozenset({"E"}))
    turn.add("Bash make", state=NEW, failed=True, signature=frozenset({"E"}))
    turn.add("Bash make", state=NEW, failed=True, signature=frozenset({"E"}))
    fired = same_error(turn.calls, turn.calls[-1], threshold=3, log=log)
    assert (fired is not None) is fires


@pytest.mark.parametrize(("seconds", "fires"), [(15.0, False), (14.0, True)])
def test_the_same_error_after_backing_off_has_patience(seconds: float, fires: bool) -> None:
    # Two rounds of retrying, 30 s each, between three failures; what was slept before the
    # first of them is not theirs.
    turn = Turn()
    turn.add("Bash sleep", waits=True, seconds=1000.0, outcome="")
    for n in range(3):
        turn.add(f"Bash try{n}", failed=True, outcome="boom", signature=frozenset({"E"}))
        if n < 2:
            for _ in range(2):
                turn.add("Bash sleep", waits=True, seconds=seconds, outcome="")
    fired = same_error(turn.calls, turn.calls[-1], threshold=3)
    assert (fired is not None) is fires


def test_the_same_error_uses_the_patience_given() -> None:
    turn = errors(("Bash a", ["E"]), ("Bash b", ["E"]), waits=True, seconds=5.0)
    assert same_error(turn.calls, turn.calls[-1], threshold=2) is not None
    quick = Patience(per_round=5.0, budget=100.0)
    assert same_error(turn.calls, turn.calls[-1], threshold=2, patience=quick) is None


# -- the same content, however it was read --------------------------------------------------


def reads(*keys: str, chars: int = 40, **fields: Any) -> Turn:
    """Reads that returned one content, the last one the latest (already in the turn)."""
    turn = Turn()
    fields.setdefault("observed", "digest")
    for key in keys:
        turn.add(key, observed_chars=chars, outcome="same", **fields)
    return turn


def test_the_same_content_names_the_reads_that_returned_it() -> None:
    turn = reads("Read a", "Bash cat", "Read a")
    fired = same_observation(turn.calls, turn.calls[-1], window=8, threshold=3)
    assert message(fired) == (
        "repeat",
        "3 differently written reads (Read, Bash) returned the same content with nothing "
        "changed in between; the next call was stopped before it ran",
    )
    assert ids(fired) == ["toolu_1", "toolu_2", "toolu_3"]


@pytest.mark.parametrize(
    ("keys", "chars", "threshold", "evidence"),
    [
        (["Read a", "Bash cat", "Grep a"], 40, 3, ["toolu_1", "toolu_2", "toolu_3"]),
        (["Read a", "Bash cat", "Grep a"], 39, 3, None),  # too short to compare
        (["Read a", "Bash cat"], 40, 3, None),  # one short
        (["Read a", "Bash cat"], 40, 2, ["toolu_1", "toolu_2"]),
        (["Read a", "Read a", "Read a"], 40, 3, None),  # one call: that is the repeat rule
        (["Read a", "Read a", "Bash cat"], 40, 3, ["toolu_1", "toolu_2", "toolu_3"]),
    ],
)
def test_the_same_content_fires_at_its_threshold(
    keys: list[str], chars: int, threshold: int, evidence: list[str] | None
) -> None:
    turn = reads(*keys, chars=chars)
    fired = same_observation(turn.calls, turn.calls[-1], window=8, threshold=threshold)
    if evidence is None:
        assert fired is None
    else:
        assert ids(fired) == evidence
        assert message(fired)[1].startswith(f"{len(evidence)} differently written reads")


@pytest.mark.parametrize(("window", "fires"), [(4, True), (3, False)])
def test_the_same_content_is_looked_for_within_the_window(window: int, fires: bool) -> None:
    turn = reads("Read a", "Bash cat")
    turn.add("Bash ls", observed="other", observed_chars=40)
    turn.add("Grep a", observed="digest", observed_chars=40)
    fired = same_observation(turn.calls, turn.calls[-1], window=window, threshold=3)
    assert (fired is not None) is fires


def test_only_successful_reads_in_the_same_state_return_the_same_content() -> None:
    turn = reads("Read a", "Bash cat")
    turn.add("Grep a", observed="digest", observed_chars=40, effect="files")
    assert same_observation(turn.calls, turn.calls[-1], window=8, threshold=3) is None
    turn = reads("Read a", "Bash cat")
    turn.add("Grep a", observed="digest", observed_chars=40, failed=True)
    assert same_observation(turn.calls, turn.calls[-1], window=8, threshold=3) is None
    turn = Turn()
    turn.add("Read a", observed="digest", observed_chars=40, failed=True)
    turn.add("Bash cat", observed="digest", observed_chars=40)
    turn.add("Grep a", observed="digest", observed_chars=40)
    assert same_observation(turn.calls, turn.calls[-1], window=8, threshold=3) is None
    turn = Turn()
    turn.add("Read a", observed="digest", observed_chars=40, state=OLD)
    turn.add("Bash cat", observed="digest", observed_chars=40, state=NEW)
    turn.add("Grep a", observed="digest", observed_chars=40, state=NEW)
    assert same_observation(turn.calls, turn.calls[-1], window=8, threshold=3) is None
    log: list[Change] = [(2, "/w/f", frozenset({"Grep a"}))]
    fired = same_observation(turn.calls, turn.calls[-1], window=8, threshold=3, log=log)
    assert fired is not None


@pytest.mark.parametrize(("seconds", "fires"), [(30.0, False), (29.0, True)])
def test_the_same_content_read_patiently_is_excused(seconds: float, fires: bool) -> None:
    # Two reads before the latest, with a 30 s wait each: two patient rounds.
    turn = Turn()
    turn.add("Bash sleep", waits=True, seconds=1000.0, outcome="")  # before: not counted
    for key in ("Read a", "Bash cat"):
        turn.add(key, observed="digest", observed_chars=40)
        turn.add("Bash sleep", waits=True, seconds=seconds, outcome="")
    turn.add("Grep a", observed="digest", observed_chars=40)
    fired = same_observation(turn.calls, turn.calls[-1], window=8, threshold=3)
    assert (fired is not None) is fires


def test_the_same_content_uses_the_patience_given() -> None:
    turn = reads("Read a", "Bash cat", "Grep a", waits=True, seconds=5.0)
    assert same_observation(turn.calls, turn.calls[-1], window=8, threshold=3) is not None
    quick = Patience(per_round=5.0, budget=100.0)
    fired = same_observation(turn.calls, turn.calls[-1], window=8, threshold=3, patience=quick)
    assert fired is None
