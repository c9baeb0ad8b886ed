"""Hard budgets: a panel stops on reaching a limit, with a halt record, and stays stopped."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from runtime.guard.budget import BudgetTracker
from runtime.instance.guard_settings import BudgetSettings
from runtime.turn.driver import Cost, Usage

NOON = datetime(2026, 1, 1, 12, tzinfo=UTC)


def tracker(**limits: float) -> BudgetTracker:
    return BudgetTracker(BudgetSettings(**limits), clock=lambda: NOON)  # type: ignore[arg-type]


def test_no_limits_never_stop() -> None:
    budget = tracker()
    for _ in range(50):
        assert not budget.begin_turn().stop
        budget.record(Usage(input_tokens=10_000, output_tokens=5_000), Cost(usd=9.0))
        assert not budget.check_before_call().stop
        budget.end_turn()
    assert budget.snapshot().session.turns == 50


def test_session_dollars_stop_the_panel_with_a_record() -> None:
    budget = tracker(max_session_usd=1.0)
    assert not budget.begin_turn(1).stop
    budget.record(Usage(100, 50), Cost(usd=0.4))
    budget.record(Usage(100, 50), Cost(usd=0.7))  # the SDK's running total for the turn
    assert not budget.check_before_call().stop
    budget.end_turn()
    assert not budget.begin_turn(2).stop
    budget.record(Usage(100, 50), Cost(usd=0.35))
    verdict = budget.check_before_call()
    assert verdict.stop and verdict.record is not None
    record = verdict.record
    assert (record.source, record.rule, record.turn, record.at) == (
        "budget",
        "session_usd",
        2,
        NOON,
    )
    assert dict(record.figures) == {"spent": pytest.approx(1.05), "limit": 1.0}
    assert verdict.message.startswith("[BUDGET HALT] session_usd: the panel reached its budget")
    budget.end_turn()
    assert budget.begin_turn(3).stop  # stays stopped until resumed
    assert budget.snapshot().stopped == record


def test_session_turns() -> None:
    budget = tracker(max_session_turns=2)
    for _ in range(2):
        assert not budget.begin_turn().stop
        budget.end_turn()
    verdict = budget.begin_turn()
    assert verdict.stop and verdict.record is not None
    assert verdict.record.rule == "session_turns"


@pytest.mark.parametrize(
    ("limits", "rule"),
    [
        ({"max_session_input_tokens": 1_000}, "session_input_tokens"),
        ({"max_session_output_tokens": 400}, "session_output_tokens"),
        ({"max_turn_input_tokens": 1_000}, "turn_input_tokens"),
        ({"max_turn_output_tokens": 400}, "turn_output_tokens"),
        ({"max_turn_requests": 2}, "turn_requests"),
        ({"max_turn_usd": 0.5}, "turn_usd"),
    ],
)
def test_each_limit_stops_before_the_next_call(limits: dict[str, float], rule: str) -> None:
    budget = tracker(**limits)
    budget.begin_turn()
    budget.record(Usage(input_tokens=300, output_tokens=200, cache_read_input_tokens=200))
    assert not budget.check_before_call().stop
    budget.record(
        Usage(input_tokens=300, output_tokens=200, cache_read_input_tokens=200), Cost(0.5)
    )
    verdict = budget.check_before_call()
    assert verdict.stop and verdict.record is not None
    assert verdict.record.rule == rule


def test_per_turn_limits_reset_each_turn_after_a_resume() -> None:
    budget = tracker(max_turn_output_tokens=100)
    budget.begin_turn()
    budget.record(Usage(10, 150))
    assert budget.check_before_call().stop
    budget.end_turn()
    budget.resume()
    assert not budget.begin_turn().stop
    assert not budget.check_before_call().stop


def test_resume_with_higher_limits() -> None:
    budget = tracker(max_session_usd=1.0)
    budget.begin_turn()
    budget.record(cost=Cost(1.0))
    assert budget.check_before_call().stop
    budget.resume(BudgetSettings(max_session_usd=2.0))
    assert not budget.check_before_call().stop


def test_figures_for_the_sdk() -> None:
    budget = tracker(max_session_usd=1.0, max_turn_usd=0.6, max_turn_requests=8)
    assert budget.sdk_max_turns() == 8
    assert budget.sdk_max_budget_usd() == pytest.approx(0.6)
    budget.begin_turn()
    budget.record(cost=Cost(0.55))
    budget.end_turn()
    assert budget.sdk_max_budget_usd() == pytest.approx(0.45)  # what the session has left
    assert tracker().sdk_max_budget_usd() is None


def test_an_unclosed_turn_keeps_its_spending() -> None:
    budget = tracker()
    budget.begin_turn()
    budget.record(Usage(10, 20), Cost(0.1))
    budget.begin_turn()  # the owner never called end_turn
    snapshot = budget.snapshot()
    assert snapshot.session.output_tokens == 20 and snapshot.session.turns == 2
    assert snapshot.turn.output_tokens == 0
