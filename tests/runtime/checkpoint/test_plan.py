"""The pure parts: what a restore changes, what pruning drops, how the list reads."""

from __future__ import annotations

from runtime.checkpoint.listing import list_lines
from runtime.checkpoint.model import FILE, AreaRecord, Changes, Checkpoint, Entry
from runtime.checkpoint.plan import changes_between, plan_prune, plan_restore


def e(blob: str) -> Entry:
    return Entry(FILE, blob)


def test_a_restore_plan_restores_recreates_removes_and_leaves_capped_files() -> None:
    target = {"same": e("1"), "changed": e("old"), "deleted": e("d"), "grew": e("small")}
    current = {"same": e("1"), "changed": e("new"), "made": e("m"), "huge-then": e("h")}
    plan = plan_restore(
        "/area", target, current, target_capped=["huge-then"], current_capped=["grew"]
    )
    assert plan.restore == (("changed", e("old")), ("grew", e("small")))  # grew: exists now
    assert plan.recreate == (("deleted", e("d")),)
    assert plan.remove == ("made",)  # not huge-then: the target did not know it
    assert plan.left == ("huge-then",)
    assert plan.directories() == frozenset({""})


def test_changes_between_two_file_lists() -> None:
    assert changes_between(None, {"a": e("1")}) == Changes(added=1, sample=("a",))
    found = changes_between({"a": e("1"), "b": e("2")}, {"a": e("9"), "c": e("3")})
    assert (found.added, found.modified, found.removed) == (1, 1, 1)
    assert found.describe() == "1 added, 1 changed, 1 removed"
    assert Changes().describe() == "no change"


def checkpoint(number: int, at: float, kind: str = "turn") -> Checkpoint:
    area = AreaRecord("/area", "k", tree="t", files=3, changes=Changes(modified=number))
    return Checkpoint(number, at, kind, "git", (area,), turn=number, note=f"turn {number}")  # type: ignore[arg-type]


def test_pruning_keeps_the_newest_whatever_the_settings() -> None:
    kept = [checkpoint(n, at=100.0 * n) for n in range(1, 8)]
    assert plan_prune(kept, keep=3, max_age_days=365, now=800) == [1, 2, 3, 4]
    assert plan_prune(kept, keep=50, max_age_days=1, now=10**9) == [1, 2, 3, 4, 5, 6]
    assert plan_prune(kept[:1], keep=1, max_age_days=0.001, now=10**9) == []
    assert plan_prune([], keep=1, max_age_days=1, now=0) == []


def test_the_list_shows_what_each_turn_then_changed() -> None:
    lines = list_lines([checkpoint(1, 0.0), checkpoint(2, 60.0), checkpoint(3, 120.0, "rewind")])
    assert lines[0].split()[:3] == ["#", "taken", "files"]
    assert 'before turn 1: "turn 1"; then 2 changed' in lines[1]
    assert lines[3].endswith("; the newest")
    assert list_lines([])[0].startswith("(no checkpoints yet")


def test_the_list_drops_control_characters_from_notes() -> None:
    shown = list_lines([Checkpoint(1, 0.0, "turn", "git", (), turn=1, note="a\x1b[2Jb\nc")])
    assert "\x1b" not in shown[1] and "a [2Jb c" in shown[1]
