"""The labelled team-loop corpus (tests/loops/corpus): every message graph replayed through the
real `TeamGraph` with its default settings.

- a loop is caught by the rule its label names (the first halt, or the flag it expects) no
  later than the turn its label gives;
- a legitimate graph trips nothing: no halt and no flag.
Each graph is one test case named after its file, so a failure names the graph.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from panels.host.loop_rules import RULES
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


def test_a_disabled_graph_finds_nothing() -> None:
    from panels.host.loop_rules import LoopSettings

    for case in LOOPS:
        outcome = replay.replay(case, LoopSettings(enabled=False))
        assert outcome.halt is None and not outcome.flags, case.name
