"""The runtime sentinel: loops stop before the looping call runs; honest repeats never do."""

from __future__ import annotations

from datetime import UTC, datetime
from itertools import count
from typing import Any

import pytest
from pydantic import ValidationError

from runtime.driver import ToolCallRequest
from runtime.guard.sentinel import Sentinel, SentinelVerdict, WorldState, canonical_arguments
from runtime.guard.settings import SentinelSettings

NOON = datetime(2026, 1, 1, 12, tzinfo=UTC)
_ids = count()


def call(name: str, **args: Any) -> ToolCallRequest:
    return ToolCallRequest(tool_use_id=f"toolu_{next(_ids)}", name=name, input=args)


def poll() -> ToolCallRequest:
    return call("Bash", command="curl -s localhost:8000/status")


def run(sentinel: Sentinel, request: ToolCallRequest, *, error: bool = False) -> SentinelVerdict:
    """Observe a call and, unless halted, its result, as the driver would."""
    verdict = sentinel.observe_call(request)
    if not verdict.halt:
        sentinel.observe_result(request.tool_use_id, is_error=error)
    return verdict


def make(**settings: Any) -> Sentinel:
    return Sentinel(SentinelSettings(**settings), clock=lambda: NOON)


def test_a_polling_loop_stops_before_its_third_call_and_resets_after() -> None:
    sentinel = make()
    sentinel.begin_turn(7)
    first, second = poll(), poll()
    assert not run(sentinel, first).halt
    assert not run(sentinel, second).halt
    third = poll()
    verdict = sentinel.observe_call(third)
    assert verdict.halt
    record = verdict.record
    assert record is not None
    assert (record.source, record.rule, record.turn, record.at) == ("sentinel", "repeat", 7, NOON)
    assert [c.tool_use_id for c in record.calls] == [
        first.tool_use_id,
        second.tool_use_id,
        third.tool_use_id,
    ]
    assert record.notice().startswith("[SENTINEL HALT] repeat:")
    assert sentinel.end_turn().halt is False
    assert not run(sentinel, poll()).halt  # a new turn starts clean
    assert not run(sentinel, poll()).halt
    sentinel.reset()  # the operator resumed
    assert not run(sentinel, poll()).halt


def test_git_status_after_each_edit_never_halts() -> None:
    sentinel = make()
    for i in range(6):
        assert not run(sentinel, call("Edit", file_path="a.py", old=f"v{i}", new=f"v{i + 1}")).halt
        assert not run(sentinel, call("Bash", command="git status")).halt


def test_failed_edits_are_not_progress() -> None:
    sentinel = make()
    edit = {"file_path": "a.py", "old_string": "x", "new_string": "y"}
    assert not run(sentinel, call("Edit", **edit), error=True).halt
    assert not run(sentinel, call("Bash", command="git status")).halt
    assert not run(sentinel, call("Edit", **edit), error=True).halt
    verdict = run(sentinel, call("Bash", command="git status"))
    assert verdict.halt and verdict.record is not None
    assert verdict.record.rule == "alternation"


def test_arguments_are_canonicalised_before_comparing() -> None:
    sentinel = make()
    run(sentinel, call("Grep", pattern="TODO", path="src"))
    run(sentinel, call("Grep", path="src", pattern="TODO "))
    verdict = sentinel.observe_call(call("Grep", path=" src", pattern="TODO"))
    assert verdict.halt
    assert canonical_arguments({"b": "x  y", "a": [" z "]}) == '{"a":["z"],"b":"x y"}'


def test_same_failing_call_three_times_even_far_apart() -> None:
    sentinel = make(window=3)
    flaky = {"command": "npm run build"}
    for i in range(2):
        assert not run(sentinel, call("Bash", **flaky), error=True).halt
        for j in range(3):
            assert not run(sentinel, call("Read", file_path=f"f{i}{j}")).halt
    verdict = sentinel.observe_call(call("Bash", **flaky))
    assert verdict.halt and verdict.record is not None
    assert verdict.record.rule == "failing"
    assert [c.failed for c in verdict.record.calls] == [True, True, None]


def test_an_owner_can_say_a_call_changed_the_world() -> None:
    sentinel = make()
    for _ in range(4):
        request = call("Bash", command="make")
        assert not sentinel.observe_call(request).halt
        sentinel.observe_result(request.tool_use_id, is_error=False, world_changed=True)


def test_shadow_mode_records_without_halting() -> None:
    sentinel = make(shadow=True)
    run(sentinel, poll())
    run(sentinel, poll())
    verdict = run(sentinel, poll())
    assert not verdict.halt
    assert verdict.record is not None and verdict.record.shadow


def test_thresholds_are_configurable() -> None:
    sentinel = make(window=6, repeat_threshold=5, alternation_cycles=0, failure_threshold=0)
    for _ in range(4):
        assert not run(sentinel, poll()).halt
    assert sentinel.observe_call(poll()).halt


@pytest.mark.parametrize(
    "settings",
    [{"repeat_threshold": 6}, {"alternation_cycles": 1}, {"failure_threshold": 1}, {"window": 1}],
)
def test_nonsense_settings_are_refused(settings: dict[str, int]) -> None:
    with pytest.raises(ValidationError):
        SentinelSettings(**settings)


def test_no_progress_for_n_turns_judged_on_world_state() -> None:
    sentinel = make(no_progress_turns=3)
    same = WorldState(git_tree="abc", slots=(("status", "h1"),))
    results = []
    for turn in range(1, 7):
        sentinel.begin_turn(turn)
        run(sentinel, call("Read", file_path=f"notes{turn}.md"))  # different words each turn
        results.append(sentinel.end_turn(same))
        if results[-1].halt:
            sentinel.reset()  # the operator looked and resumed the panel
    # Turn 1 sets the baseline; turns 2-4 change nothing; after the resume, a new baseline.
    assert [r.halt for r in results] == [False, False, False, True, False, False]
    record = results[3].record
    assert record is not None and record.rule == "no_progress" and record.turn == 4


def test_a_world_change_or_a_quiet_turn_does_not_count_as_stalling() -> None:
    sentinel = make(no_progress_turns=2)
    world = WorldState(git_tree="a")
    verdicts = []
    for turn, (calls, state) in enumerate(
        [
            (1, world),
            (1, world),
            (0, world),
            (1, WorldState(git_tree="b")),
            (1, WorldState(git_tree="b")),
        ]
    ):
        sentinel.begin_turn(turn)
        for _ in range(calls):
            run(sentinel, call("Bash", command=f"ls {turn}"))
        verdicts.append(sentinel.end_turn(state).halt)
    assert verdicts == [False, False, False, False, False]


def test_halt_records_take_row_ids_and_serialise() -> None:
    sentinel = make()
    first, second, third = poll(), poll(), poll()
    run(sentinel, first)
    run(sentinel, second)
    record = sentinel.observe_call(third).record
    assert record is not None
    stored = record.with_row_ids({first.tool_use_id: 11, second.tool_use_id: 12})
    data = stored.as_dict()
    assert [c["row_id"] for c in data["calls"]] == [11, 12, None]
    assert data["at"] == NOON.isoformat() and data["rule"] == "repeat"
