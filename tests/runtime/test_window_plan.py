"""The trim planner at its edges: each cap exactly at, one under and one over, the half-cap
slack rule, the low-water floors, forced eviction past unprotected rows, and whole plans
compared field by field."""

from __future__ import annotations

import pytest

from runtime.window.plan import RowStat, TrimPlan, WindowCaps, exceeds_caps, plan_trim, row_cap_at
from runtime.window.rows import Row, RowStatus


def window(*tokens: int, pinned: frozenset[int] = frozenset()) -> list[RowStat]:
    """Rows with ids 1, 2, ... holding `tokens` each, oldest first."""
    return [RowStat(i, t, pinned=i in pinned) for i, t in enumerate(tokens, start=1)]


@pytest.mark.parametrize(
    ("rows", "tokens", "over"),
    [
        (10, 100, False),  # exactly at both caps
        (9, 99, False),
        (11, 100, True),  # one row over
        (10, 101, True),  # one token over
    ],
)
def test_a_window_exactly_at_its_caps_is_not_over(rows: int, tokens: int, over: bool) -> None:
    assert exceeds_caps(rows, tokens, WindowCaps(max_rows=10, max_tokens=100)) is over


@pytest.mark.parametrize(
    ("max_tokens", "slack", "tokens", "row_cap"),
    [
        (100, 5, 49, 15),  # under half the token cap: stretched
        (100, 5, 50, 10),  # exactly half is no headroom
        (101, 5, 50, 10),  # half of an odd cap rounds down
        (101, 5, 34, 15),  # over a third, under a half
        (100, 1, 0, 11),  # a slack of one row counts
        (100, 0, 0, 10),
        (100, -3, 0, 10),  # a negative slack never shrinks the cap
    ],
)
def test_the_row_cap_stretches_only_below_half_the_token_cap(
    max_tokens: int, slack: int, tokens: int, row_cap: int
) -> None:
    caps = WindowCaps(max_rows=10, max_tokens=max_tokens, row_slack=slack)
    assert row_cap_at(tokens, caps) == row_cap
    assert exceeds_caps(row_cap, tokens, caps) is False
    assert exceeds_caps(row_cap + 1, tokens, caps) is True


@pytest.mark.parametrize(
    ("stats", "caps", "plan"),
    [
        pytest.param(
            window(10, 10, 10),
            WindowCaps(max_rows=3, max_tokens=30),
            TrimPlan((), (), 3, 30, 3, 30),
            id="exactly at both caps: nothing moves",
        ),
        pytest.param(
            window(10, 10, 10, 10, 10),
            WindowCaps(max_rows=4, max_tokens=1_000, low_water=0.5),
            TrimPlan((1, 2, 3), (), 5, 50, 2, 20),
            id="one row over: down to the row low water",
        ),
        pytest.param(
            window(1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1),
            WindowCaps(max_rows=10, max_tokens=1_000, row_slack=10),
            TrimPlan((1, 2, 3, 4, 5, 6), (), 21, 21, 15, 15),
            id="the slack counts in the row low water",
        ),
        pytest.param(
            window(10, 10, 10),
            WindowCaps(max_rows=1, max_tokens=1_000),
            TrimPlan((1, 2), (), 3, 30, 1, 10),
            id="the row low water never drops below one row",
        ),
        pytest.param(
            window(1, 1),
            WindowCaps(max_rows=10, max_tokens=1),
            TrimPlan((1,), (), 2, 2, 1, 1),
            id="the token low water never drops below one token",
        ),
        pytest.param(
            window(51, 25, 25),
            WindowCaps(max_rows=10, max_tokens=100, low_water=0.5),
            TrimPlan((1,), (), 3, 101, 2, 50),
            id="landing exactly on the token low water stops there",
        ),
        pytest.param(
            window(51, 26, 25),
            WindowCaps(max_rows=10, max_tokens=100, low_water=0.5),
            TrimPlan((1, 2), (), 3, 102, 1, 25),
            id="one over the token low water: the next row goes too",
        ),
    ],
)
def test_a_trim_plans_down_to_the_low_water(
    stats: list[RowStat], caps: WindowCaps, plan: TrimPlan
) -> None:
    assert plan_trim(stats, caps) == plan


@pytest.mark.parametrize(
    ("stats", "plan"),
    [
        pytest.param(
            window(90, 20, 10, pinned=frozenset({1, 3})),
            TrimPlan((2,), (), 3, 120, 2, 100),
            id="exactly at the hard cap once unprotected rows are gone: nothing forced",
        ),
        pytest.param(
            window(91, 20, 10, pinned=frozenset({1, 3})),
            TrimPlan((1, 2), (1,), 3, 121, 1, 10),
            id="one over: the oldest pinned row goes, listed in window order",
        ),
        pytest.param(
            window(10, 500, pinned=frozenset({2})),
            TrimPlan((1, 2), (2,), 2, 510, 0, 0),
            id="a pinned row after an unpinned one is still forced out",
        ),
        pytest.param(
            window(300, 50, 20, pinned=frozenset({1, 2, 3})),
            TrimPlan((1,), (1,), 3, 370, 2, 70),
            id="forcing stops as soon as the window is under the hard cap",
        ),
        pytest.param(
            window(60, 60, 60, pinned=frozenset({1, 2, 3})),
            TrimPlan((1, 2), (1, 2), 3, 180, 1, 60),
            id="forcing goes on row by row while over the hard cap",
        ),
        pytest.param(
            [RowStat(1, 500, pinned=True, in_flight=True), RowStat(2, 10)],
            TrimPlan((2,), (), 2, 510, 1, 500),
            id="a pinned row in flight is never forced out, even over the cap",
        ),
    ],
)
def test_protected_rows_are_forced_out_only_over_the_hard_token_cap(
    stats: list[RowStat], plan: TrimPlan
) -> None:
    assert plan_trim(stats, WindowCaps(max_rows=10, max_tokens=100, low_water=0.5)) == plan


@pytest.mark.parametrize(
    ("status", "in_flight"),
    [("in_flight", True), ("complete", False), ("interrupted", False)],
)
def test_a_row_stat_is_in_flight_only_for_the_turn_in_flight(
    status: RowStatus, in_flight: bool
) -> None:
    row = Row(7, "t", "user", (), 42, pinned=True, status=status, compressed=True)
    assert RowStat.of(row) == RowStat(7, 42, pinned=True, compressed=True, in_flight=in_flight)
    assert RowStat.of(row).in_flight is in_flight
