"""The edges of the pure checkpoint plans: which files a restore writes, removes or leaves,
the directories it makes, what a change summary samples, and which checkpoints pruning drops
exactly at its count and age limits."""

from __future__ import annotations

import pytest

from runtime.checkpoint.model import EXECUTABLE, FILE, AreaRecord, Changes, Checkpoint, Entry
from runtime.checkpoint.plan import DAY, SAMPLE, AreaPlan, changes_between, plan_prune, plan_restore


def e(blob: str, mode: int = FILE) -> Entry:
    return Entry(mode, blob)


def test_a_restore_plan_per_path() -> None:
    target = {"b/same": e("1"), "a/changed": e("old"), "z/gone": e("z"), "mode": e("m"),
              "y/gone": e("y"), "big-now": e("small")}  # fmt: skip
    current = {"b/same": e("1"), "a/changed": e("new"), "mode": e("m", EXECUTABLE),
               "new": e("n"), "also-new": e("n2"), "big-then": e("h")}  # fmt: skip
    plan = plan_restore(
        "/area", target, current, target_capped=["big-then", "never-seen"],
        current_capped=["big-now"]
    )  # fmt: skip
    assert plan == AreaPlan(
        "/area",
        restore=(("a/changed", e("old")), ("big-now", e("small")), ("mode", e("m"))),
        recreate=(("y/gone", e("y")), ("z/gone", e("z"))),
        remove=("also-new", "new"),
        left=("big-then",),  # "never-seen": neither here now nor capped now
    )
    assert plan.writes == plan.restore + plan.recreate


def test_a_file_capped_in_both_is_left_and_not_removed() -> None:
    plan = plan_restore("/a", {}, {}, target_capped=["huge"], current_capped=["huge"])
    assert plan == AreaPlan("/a", left=("huge",))


def test_nothing_to_do_when_the_area_is_as_it_was() -> None:
    files = {"a": e("1"), "d/b": e("2")}
    assert plan_restore("/a", files, dict(files)) == AreaPlan("/a")
    assert AreaPlan("/a").directories() == frozenset()


def test_the_directories_a_restore_writes_into_include_every_parent() -> None:
    plan = AreaPlan(
        "/a", restore=(("top", e("1")),), recreate=(("x/y/z/f", e("2")), ("x/w/g", e("3")))
    )
    assert plan.directories() == frozenset({"", "x", "x/y", "x/y/z", "x/w"})


def test_changes_sample_a_few_paths_of_every_kind_sorted() -> None:
    before = {"m1": e("1"), "m2": e("2"), "r1": e("r"), "same": e("s")}
    after = {"m1": e("9"), "m2": e("8"), "same": e("s"), "a1": e("a"), "a2": e("b"), "a3": e("c")}
    found = changes_between(before, after)
    assert found == Changes(
        added=3, modified=2, removed=1, sample=("a1", "a2", "a3", "m1", "m2")[:SAMPLE]
    )
    assert SAMPLE == 5
    assert changes_between(before, before) == Changes()


@pytest.mark.parametrize("count", [SAMPLE - 1, SAMPLE, SAMPLE + 1])
def test_everything_is_added_without_a_before_and_the_sample_is_capped(count: int) -> None:
    after = {f"f{i}": e(str(i)) for i in reversed(range(count))}
    found = changes_between(None, after)
    assert found == Changes(added=count, sample=tuple(sorted(after))[:SAMPLE])
    assert len(found.sample) == min(count, SAMPLE)


def test_the_sample_is_capped_with_a_before_too() -> None:
    found = changes_between({"r": e("r")}, {f"f{i}": e(str(i)) for i in range(7)})
    assert found == Changes(added=7, removed=1, sample=("f0", "f1", "f2", "f3", "f4"))


def checkpoint(number: int, at: float) -> Checkpoint:
    area = AreaRecord("/area", "k", tree="t", files=1, changes=Changes())
    return Checkpoint(number, at, "turn", "git", (area,))


NOW = 100 * DAY


@pytest.mark.parametrize(
    ("ages_in_days", "keep", "max_age_days", "dropped"),
    [
        # By count: all but the newest `keep`; exactly `keep` drops nothing.
        ([3, 2, 1], 3, 30, []),
        ([3, 2, 1], 2, 30, [1]),
        ([4, 3, 2, 1], 1, 30, [1, 2, 3]),
        ([3, 2, 1], 0, 30, [1, 2]),  # keep 0 still keeps the newest
        # By age: older than the cutoff goes, exactly at it stays; never the newest.
        ([31, 30, 29], 10, 30, [1]),
        ([40, 35], 10, 30, [1]),
        ([40], 10, 30, []),
    ],
)
def test_pruning_by_count_and_age(
    ages_in_days: list[float], keep: int, max_age_days: float, dropped: list[int]
) -> None:
    kept = [checkpoint(n, NOW - age * DAY) for n, age in enumerate(ages_in_days, start=1)]
    assert plan_prune(kept, keep=keep, max_age_days=max_age_days, now=NOW) == dropped
    assert plan_prune(list(reversed(kept)), keep=keep, max_age_days=max_age_days,
                      now=NOW) == dropped  # fmt: skip


def test_a_day_is_a_day_of_seconds() -> None:
    assert DAY == 86_400.0
    kept = [checkpoint(1, NOW - 86_401.0), checkpoint(2, NOW - 86_399.0), checkpoint(3, NOW)]
    assert plan_prune(kept, keep=10, max_age_days=1, now=NOW) == [1]
