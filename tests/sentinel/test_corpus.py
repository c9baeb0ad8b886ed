"""The labelled corpus (tests/sentinel/corpus): every sequence replayed through the real
`Sentinel` with its default settings, in a simulated world hashed for real.

- a legitimate session is never halted (not one false halt: the sentinel is on by default);
- a polling loop is refused before its third identical (normalised) call, and by its label;
- at least 95% of the other runaways are halted by the point their label gives.
Each sequence is one test case named after its file, so a failure names the sequence.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from runtime.instance.guard_settings import SentinelSettings
from tests.corpus_kit import load_replay

# The replayer lives with the corpus it reads (bench/sentinel_corpus.py loads it too).
replay = load_replay(Path(__file__).parent / "corpus" / "replay.py", "sentinel_corpus_replay")
CASES = replay.load_all()
LEGIT = [c for c in CASES if not c.runaway]
POLLING = [c for c in CASES if c.runaway and c.polling]
OTHER_RUNAWAYS = [c for c in CASES if c.runaway and not c.polling]


def ids(cases: list[Any]) -> list[str]:
    return [c.name for c in cases]


def test_the_corpus_is_large_balanced_and_labelled() -> None:
    assert len(CASES) >= 40
    runaways = len(POLLING) + len(OTHER_RUNAWAYS)
    assert abs(runaways - len(LEGIT)) <= len(CASES) // 5, (runaways, len(LEGIT))
    rules = {c.rule for c in CASES if c.runaway}
    assert rules == set(replay.RULES)
    for case in POLLING:
        third = replay.third_identical_call(case)
        assert third is not None, f"{case.name}: a polling loop without a third identical call"
        assert case.halt_by <= third, f"{case.name}: halt_by is after the third identical call"


@pytest.mark.parametrize("case", LEGIT, ids=ids(LEGIT))
def test_a_legitimate_session_is_never_halted(case: Any) -> None:
    outcome = replay.replay(case)
    assert outcome.halted_at is None, (
        f"{outcome.sequence.name}: false halt at {replay.show(outcome.halted_at)} by "
        f"{outcome.rule}: {outcome.message}"
    )


@pytest.mark.parametrize("case", POLLING, ids=ids(POLLING))
def test_a_polling_loop_is_refused_before_its_third_identical_call(case: Any) -> None:
    outcome = replay.replay(case)
    assert outcome.caught, (
        f"{outcome.sequence.name}: halted at {replay.show(outcome.halted_at)} "
        f"({outcome.rule}); the third identical call is {replay.show(outcome.third_identical)}, "
        f"labelled {replay.show(outcome.sequence.halt_by)}"
    )


def test_nearly_every_other_runaway_is_halted_by_its_labelled_point() -> None:
    outcomes = [replay.replay(c) for c in OTHER_RUNAWAYS]
    missed = [
        f"{o.sequence.name} (labelled {o.sequence.rule} by {replay.show(o.sequence.halt_by)}, "
        f"got {o.rule} at {replay.show(o.halted_at)})"
        for o in outcomes
        if not o.caught
    ]
    recall = 1 - len(missed) / len(outcomes)
    assert recall >= 0.95, f"recall {recall:.0%}; missed: {missed}"


SAMPLE = [*POLLING[:3], *OTHER_RUNAWAYS[::4]]


@pytest.mark.parametrize("case", SAMPLE, ids=ids(SAMPLE))
def test_shadow_mode_records_what_it_would_halt_and_stops_nothing(case: Any) -> None:
    outcome = replay.replay(case, SentinelSettings(shadow=True))
    assert outcome.halted_at is None and outcome.shadow_records
