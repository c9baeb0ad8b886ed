"""Window trimming: caps, slack, low-water steps, pinned protection and forced evictions."""

from __future__ import annotations

from runtime.window.plan import RowStat, WindowCaps, plan_trim


def stats(
    n: int, tokens: int = 10, pinned: set[int] | frozenset[int] = frozenset()
) -> list[RowStat]:
    return [RowStat(i, tokens, pinned=i in pinned) for i in range(1, n + 1)]


def test_under_caps_nothing_moves() -> None:
    plan = plan_trim(stats(10), WindowCaps(max_rows=10, max_tokens=1_000))
    assert not plan.needed
    assert plan.rows_after == 10


def test_row_cap_drops_oldest_down_to_low_water() -> None:
    plan = plan_trim(stats(11), WindowCaps(max_rows=10, max_tokens=10_000, low_water=0.5))
    assert plan.evict_ids == (1, 2, 3, 4, 5, 6)
    assert plan.rows_after == 5


def test_trimming_in_steps_keeps_the_prefix_stable_between_trims() -> None:
    caps = WindowCaps(max_rows=10, max_tokens=10_000, low_water=0.6)
    window = stats(11)
    window = [s for s in window if s.id not in plan_trim(window, caps).evict_ids]
    first_kept = window[0].id
    # The following turns append rows; the oldest row stays until the cap is hit again.
    changes = 0
    for new_id in range(12, 16):
        window.append(RowStat(new_id, 10))
        plan = plan_trim(window, caps)
        changes += plan.needed
    assert changes == 0
    assert window[0].id == first_kept


def test_token_cap_drops_to_token_low_water() -> None:
    plan = plan_trim(stats(10, tokens=100), WindowCaps(max_rows=100, max_tokens=900, low_water=0.5))
    assert plan.tokens_after <= 450
    assert plan.evict_ids == (1, 2, 3, 4, 5, 6)


def test_slack_lets_rows_stretch_while_tokens_have_headroom() -> None:
    caps = WindowCaps(max_rows=10, max_tokens=10_000, row_slack=5)
    assert not plan_trim(stats(15), caps).needed
    assert plan_trim(stats(16), caps).needed
    # Without token headroom the slack is gone.
    assert plan_trim(stats(11, tokens=600), caps).needed


def test_pinned_rows_are_protected_from_row_cap() -> None:
    plan = plan_trim(stats(12, pinned={1, 2}), WindowCaps(max_rows=10, max_tokens=10_000))
    assert 1 not in plan.evict_ids and 2 not in plan.evict_ids
    assert plan.forced_ids == ()


def test_pinned_rows_forced_out_only_over_the_hard_token_cap_and_counted() -> None:
    window = [RowStat(1, 500, pinned=True), RowStat(2, 500, pinned=True), RowStat(3, 100)]
    plan = plan_trim(window, WindowCaps(max_rows=100, max_tokens=800))
    assert plan.evict_ids == (1, 3)
    assert plan.forced_ids == (1,)
    assert plan.tokens_after <= 800


def test_in_flight_row_is_never_dropped() -> None:
    window = [RowStat(1, 5_000, in_flight=True), RowStat(2, 10)]
    plan = plan_trim(window, WindowCaps(max_rows=100, max_tokens=1_000))
    assert 1 not in plan.evict_ids


def test_compression_stubs_protected_only_when_configured() -> None:
    window = [RowStat(1, 10, compressed=True), *stats(11)[1:]]
    loose = plan_trim(window, WindowCaps(max_rows=10, max_tokens=10_000))
    kept = plan_trim(window, WindowCaps(max_rows=10, max_tokens=10_000, protect_compressed=True))
    assert 1 in loose.evict_ids
    assert 1 not in kept.evict_ids


def test_evicted_ids_come_in_window_order_forced_ones_among_them() -> None:
    """The plan lists rows as the window holds them, whatever their ids, with the protected
    rows forced out in their places, not after the others."""
    window = [
        RowStat(9, 100, pinned=True),
        RowStat(4, 100),
        RowStat(7, 100, pinned=True),
        RowStat(2, 100),
        RowStat(5, 100),
    ]
    plan = plan_trim(window, WindowCaps(max_rows=10, max_tokens=150, low_water=0.9))
    # 4, 2 and 5 go first (low water); still over the hard cap, so the oldest pinned row too.
    assert plan.evict_ids == (9, 4, 2, 5)
    assert plan.forced_ids == (9,)
