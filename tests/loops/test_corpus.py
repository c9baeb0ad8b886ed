"""The labelled team-loop corpus (tests/loops/corpus): every message graph replayed through the
real `TeamGraph` with its default settings.

- a loop is caught by the rule its label names (the first halt, or the flag it expects) no
  later than the turn its label gives;
- a legitimate graph trips nothing: no halt and no flag;
- every graph keeps to the host's send limits (what the host would refuse is not traffic);
- a host restart in the middle of any graph (the graph's state written to a real host.sqlite
  after every turn, the file closed and opened again, a fresh graph restored from it) changes
  no outcome;
- the time windows decide the spread-out graphs: without them, they would be halted.
Each graph is one test case named after its file, so a failure names the graph.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from panels.host.loops.graph import TeamGraph
from panels.host.loops.rules import RULES, LoopSettings
from panels.host.loops.state import decode, encode
from panels.hostdb import connect
from panels.hostdb.loopstate import load_loop_rows, save_loop_rows
from tests.corpus_kit import load_replay

# The replayer lives with the corpus it reads (bench/loop_corpus.py loads it too).
replay = load_replay(Path(__file__).parent / "corpus" / "replay.py", "loop_corpus_replay")
CASES = replay.load_all()
LEGIT = [c for c in CASES if not c.loop]
LOOPS = [c for c in CASES if c.loop]


def ids(cases: list[Any]) -> list[str]:
    return [c.name for c in cases]


def test_the_corpus_is_large_balanced_and_labelled() -> None:
    assert len(CASES) >= 20
    assert abs(len(LOOPS) - len(LEGIT)) <= len(CASES) // 5, (len(LOOPS), len(LEGIT))
    assert {c.rule for c in LOOPS} == set(RULES)
    for label, shapes in replay.SHAPES.items():  # every shape stands for at least one graph
        assert {c.shape for c in CASES if c.loop == (label == "loop")} == set(shapes), label
    for case in LOOPS:
        assert case.fire_by is not None and 1 <= case.fire_by <= len(case.turns), case.name


@pytest.mark.parametrize("case", LOOPS, ids=ids(LOOPS))
def test_a_loop_is_caught_by_its_rule_in_time(case: Any) -> None:
    outcome = replay.replay(case)
    if case.expect == "flag":
        flags = [(turn, v) for turn, v in outcome.flags if v.rule == case.rule]
        assert flags, f"{case.name}: never flagged by {case.rule}"
        turn, verdict = flags[0]
        assert turn <= case.fire_by, f"{case.name}: flagged at turn {turn}, after {case.fire_by}"
        assert outcome.halt is None, f"{case.name}: halted by {outcome.halt}"
        assert verdict.message_ids and verdict.edge
        return
    assert outcome.halt is not None, f"{case.name}: never halted ({case.description})"
    assert outcome.halt.rule == case.rule, f"{case.name}: halted first by {outcome.halt.rule}"
    assert outcome.halted_at <= case.fire_by, (
        f"{case.name}: halted at turn {outcome.halted_at}, after {case.fire_by}"
    )
    # The evidence: the edge and the message ids, and who is stopped.
    assert outcome.halt.message_ids and outcome.halt.panels
    assert " -> " in outcome.halt.edge


@pytest.mark.parametrize("case", LEGIT, ids=ids(LEGIT))
def test_a_legitimate_graph_trips_nothing(case: Any) -> None:
    outcome = replay.replay(case)
    assert outcome.halt is None, f"{case.name}: halted at turn {outcome.halted_at}: {outcome.halt}"
    assert not outcome.flags, f"{case.name}: flagged: {outcome.flags}"


@pytest.mark.parametrize("case", CASES, ids=ids(CASES))
def test_every_graph_keeps_to_the_send_limits(case: Any) -> None:
    assert replay.replay(case).refused == 0


def restarting_at(middle: int, path: Path) -> Any:
    """A `between_turns` that writes the graph's changes to the host.sqlite at `path` after
    every turn, as the loop watch does, and before turn `middle` closes the file and goes on
    with a fresh graph restored from it (a host restart)."""

    def between(index: int, graph: Any) -> Any:
        conn = connect(path)
        try:
            rows, dropped = encode(graph.take_changes())
            save_loop_rows(conn, rows, dropped, keep=graph.settings.memory)
            if index != middle:
                return graph
            restarted = TeamGraph(graph.settings)
            restarted.restore(decode(load_loop_rows(conn), restarted.settings))
            return restarted
        finally:
            conn.close()

    return between


@pytest.mark.parametrize("case", CASES, ids=ids(CASES))
def test_a_restart_half_way_changes_no_outcome(case: Any, tmp_path: Path) -> None:
    middle = max(2, min(len(case.turns), case.fire_by or len(case.turns)) - 1)
    whole = replay.replay(case)
    cut = replay.replay(case, between_turns=restarting_at(middle, tmp_path / "host.sqlite"))
    assert (cut.halted_at, cut.halt) == (whole.halted_at, whole.halt)
    assert [(t, v.rule) for t, v in cut.flags] == [(t, v.rule) for t, v in whole.flags]


def test_a_restart_that_forgets_the_graph_misses_the_loop_it_split(tmp_path: Path) -> None:
    """The check above can fail: a restart that starts from an empty graph instead of the
    stored one lets the same loop run past its labelled turn."""
    case = next(c for c in LOOPS if c.name == "loop_ping_pong_two_panels")

    def forget(index: int, graph: Any) -> Any:
        return TeamGraph(graph.settings) if index == case.fire_by - 2 else graph

    outcome = replay.replay(case, between_turns=forget)
    assert outcome.halted_at is None or outcome.halted_at > case.fire_by


SPREAD_OUT = ["legit_heartbeats_far_apart", "legit_retries_with_backoff"]


@pytest.mark.parametrize("name", SPREAD_OUT)
def test_time_decides_the_spread_out_graphs(name: str) -> None:
    (case,) = [c for c in LEGIT if c.name == name]
    assert replay.replay(case).halt is None
    timeless = LoopSettings(ping_pong_window=10**9)
    halted = replay.replay(case, timeless).halt
    assert halted is not None and halted.rule == "ping_pong"


def test_a_disabled_graph_finds_nothing() -> None:
    for case in LOOPS:
        outcome = replay.replay(case, LoopSettings(enabled=False))
        assert outcome.halt is None and not outcome.flags, case.name
