"""The sentinel hands each rule the change log and its patience, keeps notes out of the other
calls' windows, and turns a call's result into what the rules compare."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from itertools import count
from typing import Any

from runtime.guard.sentinel import Sentinel, SentinelVerdict, WorldState
from runtime.instance.guard_settings import SentinelSettings
from runtime.turn.driver import ToolCallRequest

ROOT = "/w"
_ids = count()


def call(name: str, **args: Any) -> ToolCallRequest:
    return ToolCallRequest(tool_use_id=f"toolu_{next(_ids)}", name=name, input=args)


def bash(command: str) -> ToolCallRequest:
    return call("Bash", command=command)


class Panel:
    """A sentinel fed as the guard feeds it, with a clock that moves as calls take time."""

    def __init__(self, **settings: Any) -> None:
        self.now = datetime(2026, 12, 1, tzinfo=UTC)
        self.sentinel = Sentinel(SentinelSettings(**settings), clock=lambda: self.now)
        self.world: WorldState | None = WorldState(git_tree="g")
        self.sentinel.begin_turn(1)

    def run(
        self, request: ToolCallRequest, out: str = "", *, error: bool = False, took: float = 0
    ) -> SentinelVerdict:
        verdict = self.sentinel.observe_call(request, self.world, root=ROOT)
        if not verdict.halt:
            self.now += timedelta(seconds=took)
            self.sentinel.observe_result(request.tool_use_id, is_error=error, content=out)
        return verdict

    def rule(self, request: ToolCallRequest) -> str | None:
        """The rule that stops `request`, if one does."""
        verdict = self.sentinel.observe_call(request, self.world, root=ROOT)
        return verdict.record.rule if verdict.halt and verdict.record else None


def files(**contents: str) -> WorldState:
    return WorldState(files_written=tuple((f"/w/{k}", v) for k, v in contents.items()),
                      git_tree="g")  # fmt: skip


def boom(n: int) -> str:
    """The same error, said with a different last line each time."""
    return f"RuntimeError: the cache is locked\nheld by {('alpha', 'beta', 'gamma')[n]}"


def test_an_edit_rewritten_after_its_first_change_alternates_with_its_check() -> None:
    # The first edit changed the file; the second wrote it again unchanged: no progress.
    panel = Panel()
    edit = {"file_path": "/w/a.py", "old_string": "1", "new_string": "2"}
    panel.world = files(**{"a.py": "v1"})
    assert not panel.run(call("Edit", **edit), "ok").halt
    panel.world = files(**{"a.py": "v2"})
    assert not panel.run(bash("pytest -q"), "1 failed", error=True).halt
    assert not panel.run(call("Edit", **edit), "ok").halt
    assert panel.rule(bash("pytest -q")) == "alternation"


def test_a_call_that_fails_the_same_way_after_its_own_changes_is_failing() -> None:
    panel = Panel()
    for n in range(2):
        panel.world = files(**{"cache.db": f"v{n}"})  # what the last make wrote
        assert not panel.run(bash("make cache"), boom(n), error=True).halt
    panel.world = files(**{"cache.db": "v2"})
    assert panel.rule(bash("make cache")) == "failing"


def test_an_error_that_came_back_after_the_calls_own_changes_stops_the_next_call() -> None:
    panel = Panel()
    for n, command in enumerate(("make c", "make a", "make c")):
        panel.world = files(**{"c.out": "v1" if n else "v0"})  # the first `make c` wrote it
        assert not panel.run(bash(command), boom(n), error=True).halt
    assert panel.rule(bash("ls")) == "failing"


def test_a_halt_found_in_a_result_lapses_when_the_world_changes() -> None:
    for moved, rule in ((False, "failing"), (True, None)):
        panel = Panel()
        for n, command in enumerate(("make a", "make b", "make c")):
            assert not panel.run(bash(command), boom(n), error=True).halt
        if moved:
            panel.world = WorldState(git_tree="someone pushed")
        assert panel.rule(bash("ls")) == rule


def test_a_halt_found_in_a_result_survives_the_results_of_parallel_calls() -> None:
    panel = Panel()
    for n, command in enumerate(("make a", "make b")):
        assert not panel.run(bash(command), boom(n), error=True).halt
    third, beside = bash("make c"), bash("ls")
    for request in (third, beside):
        assert not panel.sentinel.observe_call(request, panel.world, root=ROOT).halt
    panel.sentinel.observe_result(third.tool_use_id, is_error=True, content=boom(2))
    panel.sentinel.observe_result(beside.tool_use_id, is_error=False, content="a.py")
    assert panel.rule(bash("pwd")) == "failing"


def test_the_first_halt_found_in_parallel_results_is_the_one_kept() -> None:
    panel = Panel()
    first = [bash("make a"), bash("make b")]
    for n, request in enumerate(first):
        assert not panel.run(request, boom(n), error=True).halt
    parallel = [bash("make c"), bash("make d")]
    for request in parallel:
        assert not panel.sentinel.observe_call(request, panel.world, root=ROOT).halt
    for request in parallel:  # each result is the same error a third time
        panel.sentinel.observe_result(request.tool_use_id, is_error=True, content=boom(2))
    verdict = panel.sentinel.observe_call(bash("pwd"), panel.world, root=ROOT)
    assert verdict.halt and verdict.record is not None
    expected = [*first, parallel[0]]
    assert [c.tool_use_id for c in verdict.record.calls] == [r.tool_use_id for r in expected]


# Each rule that allows for waiting is given the settings' patience (5 s a round here, where
# the default would be 30 s): rounds of 5 s are patient.
PATIENT = {"patient_round_s": 5}


def test_a_cycle_that_waits_has_the_patience_set() -> None:
    for settings, halts in (({}, True), (PATIENT, False)):
        panel = Panel(**settings)
        calls = [(bash("sleep 5 && gh run view 1"), 5.0), (bash("tail ci.log"), 0.0)] * 3
        stopped = [panel.run(r, "still running", took=t).halt for r, t in calls]
        assert any(stopped) is halts


def test_retries_that_back_off_have_the_patience_set() -> None:
    for settings, rule in (({}, "failing"), (PATIENT, None)):
        panel = Panel(**settings)
        # two different ways to back off, or the retries would be a cycle
        for n, back_off in enumerate(("sleep 5", "sleep 5 && ls")):
            assert not panel.run(bash("make cache"), boom(n), error=True).halt
            assert not panel.run(bash(back_off), took=5).halt
        assert panel.rule(bash("make cache")) == rule


def test_one_error_through_calls_that_back_off_has_the_patience_set() -> None:
    for settings, rule in (({}, "failing"), (PATIENT, None)):
        panel = Panel(**settings)
        for n, command in enumerate(("make a", "make b", "make c")):
            assert not panel.run(bash(command), boom(n), error=True).halt
            if n < 2:
                assert not panel.run(bash(f"sleep {n + 5}"), took=5).halt
        assert panel.rule(bash("ls")) == rule


LONG = "the same page of a long log, with nothing new in it since the last look\n" * 2


def test_the_same_content_read_patiently_has_the_patience_set() -> None:
    for settings, rule in (({}, "repeat"), (PATIENT, None)):
        panel = Panel(**settings)
        for n, command in enumerate(("cat app.log", "head -2 app.log", "tail -2 app.log")):
            assert not panel.run(bash(command), LONG).halt
            if n < 2:
                assert not panel.run(bash(f"sleep {n + 5}"), took=5).halt
        assert panel.rule(bash("ls")) == rule


def test_a_read_and_cat_of_one_file_return_the_same_content() -> None:
    panel = Panel()
    numbered = "".join(f"{n:>6}\t{line}\n" for n, line in enumerate(LONG.splitlines(), 1))
    assert not panel.run(bash("head -2 app.log"), LONG).halt
    assert not panel.run(call("Read", file_path="/w/app.log"), numbered).halt
    assert not panel.run(bash("tail -2 app.log"), LONG).halt
    assert panel.rule(bash("ls")) == "repeat"


def test_notes_are_out_of_the_other_calls_windows_but_count_their_own_repeats() -> None:
    panel = Panel(window=3, repeat_threshold=3)
    for n in range(2):
        assert not panel.run(bash("kubectl get pods"), "api 0/1 Pending").halt
        note = call("mcp__mnemara__upsert_slot", label="pods", content=f"check {'x' * n}")
        assert not panel.run(note, "ok").halt
    assert panel.rule(bash("kubectl get pods")) == "repeat"
    panel = Panel()
    note = {"label": "status", "content": "waiting"}
    for _ in range(2):
        assert not panel.run(call("mcp__mnemara__upsert_slot", **note), "ok").halt
        assert not panel.run(bash("ls"), "a.py").halt
    assert panel.rule(call("mcp__mnemara__upsert_slot", **note)) == "repeat"


def test_a_result_given_no_content_is_an_empty_result() -> None:
    panel = Panel()
    assert not panel.run(bash("touch a"), "").halt
    first = bash("touch a")
    assert not panel.sentinel.observe_call(first, panel.world, root=ROOT).halt
    panel.sentinel.observe_result(first.tool_use_id, is_error=False)
    assert panel.rule(bash("touch a")) == "repeat"


def test_the_same_output_failing_after_it_passed_is_a_new_result() -> None:
    panel = Panel()
    assert not panel.run(bash("./check.sh"), "done").halt
    assert not panel.run(bash("./check.sh"), "done", error=True).halt
    assert panel.rule(bash("./check.sh")) is None


def test_an_edit_failing_two_different_ways_is_not_failing_the_same_way() -> None:
    panel = Panel()
    edit = {"file_path": "/w/a.py", "old_string": "x = 1", "new_string": "x = 2"}
    assert not panel.run(call("Edit", **edit), "String to replace not found", error=True).halt
    assert not panel.run(call("Edit", **edit), "Permission denied: a.py", error=True).halt
    assert panel.rule(call("Edit", **edit)) is None


def test_turns_that_learn_only_through_notes_learn_nothing() -> None:
    panel = Panel(no_progress_turns=2)
    halts = []
    for turn, word in enumerate(("alpha", "beta", "gamma"), 1):
        panel.sentinel.begin_turn(turn)
        note = call("mcp__mnemara__upsert_slot", label="status", content=word)
        panel.run(note, f"slot status now reads {word}")
        halts.append(panel.sentinel.end_turn(WorldState(git_tree="g"), root=ROOT).halt)
    assert halts == [False, False, True]


def test_a_turn_that_learns_starts_the_count_of_stalled_turns_again() -> None:
    panel = Panel(no_progress_turns=2)
    halts = []
    for turn, out in enumerate(("a.py", "a.py", "b.py", "b.py", "b.py"), 1):
        panel.sentinel.begin_turn(turn)
        panel.run(bash("ls"), out)
        halts.append(panel.sentinel.end_turn(WorldState(git_tree="g"), root=ROOT).halt)
    # 1: first; 2: stalled; 3: learnt b.py; 4: stalled once; 5: twice.
    assert halts == [False, False, False, False, True]


def test_a_test_run_after_a_reset_is_remembered() -> None:
    panel = Panel()
    panel.sentinel.reset()
    assert not panel.run(bash("pytest -q"), "1 failed", error=True).halt
    assert not panel.run(bash("kubectl get pods"), "Pending").halt
    assert not panel.run(bash("kubectl get pods"), "Pending").halt
    assert not panel.run(bash("pytest -q"), "1 passed").halt
    assert panel.rule(bash("kubectl get pods")) is None
