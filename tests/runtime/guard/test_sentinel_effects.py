"""The sentinel judges calls by what they do and what they return, not by their spelling:
identities, outcomes, error signatures, patience for polls that wait, changes from outside,
bookkeeping, states revisited across turns."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from itertools import count
from typing import Any

import pytest

from runtime.guard.bookkeeping import content_digest, is_bookkeeping
from runtime.guard.calls import effect_of, error_signature, observation, wait_seconds
from runtime.guard.identity import call_identity
from runtime.guard.sentinel import Sentinel, SentinelVerdict, WorldState
from runtime.instance.guard_settings import DEFAULT_BOOKKEEPING_FILES, SentinelSettings
from runtime.turn.driver import ToolCallRequest

ROOT = "/w"
_ids = count()


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 12, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


def call(name: str, **args: Any) -> ToolCallRequest:
    return ToolCallRequest(tool_use_id=f"toolu_{next(_ids)}", name=name, input=args)


def bash(command: str) -> ToolCallRequest:
    return call("Bash", command=command)


class Panel:
    """A sentinel fed as the guard feeds it, with a clock that moves as calls take time."""

    def __init__(self, **settings: Any) -> None:
        self.clock = Clock()
        self.sentinel = Sentinel(SentinelSettings(**settings), clock=self.clock)
        self.world = WorldState(git_tree="start")
        self.sentinel.begin_turn(1)

    def run(
        self, request: ToolCallRequest, out: str = "", *, error: bool = False, took: float = 1.0
    ) -> SentinelVerdict:
        self.clock.now += timedelta(seconds=5)
        verdict = self.sentinel.observe_call(request, self.world, root=ROOT)
        if not verdict.halt:
            self.clock.now += timedelta(seconds=took)
            self.sentinel.observe_result(request.tool_use_id, is_error=error, content=out)
        return verdict

    def halts(self, calls: list[tuple[ToolCallRequest, str]], **kw: Any) -> int | None:
        """The 1-based position of the first halted call, or None."""
        for i, (request, out) in enumerate(calls, 1):
            if self.run(request, out, **kw).halt:
                return i
        return None


# -- what a call does ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("a", "b"),
    [
        (bash("cat src/a.py"), call("Read", file_path="/w/src/a.py")),
        (bash("cat ./src/a.py"), call("Read", file_path="/w/src/../src/a.py")),
        (bash("grep -rn TODO src"), bash("grep --line-number -r TODO ./src/")),
        (bash("python3 -m pytest -q tests"), bash("uv run pytest -q tests")),
        (bash("npm run test"), bash("yarn test")),
        (bash("git st"), bash("git status")),
        (bash("ls -la /w/src"), bash("ls -al src")),
        (bash("curl -sSL x.io"), bash("curl --silent --show-error --location x.io")),
        (call("Edit", file_path="/w/a.py", old_string="a", new_string="b"),
         call("Edit", file_path="a.py", new_string="b", old_string="a")),
    ],
)  # fmt: skip
def test_one_action_spelt_two_ways_is_one_call(a: ToolCallRequest, b: ToolCallRequest) -> None:
    assert call_identity(a.name, a.input, ROOT) == call_identity(b.name, b.input, ROOT)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        (bash("ls src"), bash("ls -la src")),  # different output: not one action
        (bash("cat src/a.py"), call("Read", file_path="/w/src/a.py", offset=10, limit=5)),
        (bash("head -n5 a.log"), bash("head -n -5 a.log")),  # a valued option is not split
        (bash("cat /etc/hosts"), bash("cat hosts")),  # outside the root stays absolute
        (bash("grep -rn TODO src"), bash("grep -rn FIXME src")),
        (call("Edit", file_path="/w/a.py", old_string="a", new_string="b"),
         call("Edit", file_path="/w/a.py", old_string="a ", new_string="b")),
    ],
)  # fmt: skip
def test_different_actions_stay_different(a: ToolCallRequest, b: ToolCallRequest) -> None:
    assert call_identity(a.name, a.input, ROOT) != call_identity(b.name, b.input, ROOT)


def test_how_long_a_call_asks_to_wait() -> None:
    assert wait_seconds("Bash", {"command": "sleep 60 && gh run view 1"}) == 60
    assert wait_seconds("Bash", {"command": "sleep 2m; sleep 30"}) == 150
    assert wait_seconds("Bash", {"command": "gh run view 1", "timeout": 600000}) is None
    assert wait_seconds("TaskOutput", {"task_id": "b1", "block": True, "timeout": 300000}) == 300
    assert wait_seconds("TaskOutput", {"task_id": "b1", "block": False}) is None
    assert wait_seconds("mcp__ci__wait_for_run", {"run": 4, "wait_seconds": 45}) == 45
    assert wait_seconds("mcp__ci__get_run", {"run": 4, "timeout": 45}) is None


def test_a_command_that_only_redirects_into_files_is_measured_not_opaque() -> None:
    assert effect_of("Bash", {"command": 'echo "round 2" >> agent.log'}, ()) == "files"
    assert effect_of("Bash", {"command": "pytest -q > out.txt"}, ()) == "files"
    assert effect_of("Bash", {"command": "pip install x > log.txt"}, ()) == "change"
    assert effect_of("Bash", {"command": "cat a.py"}, ()) == "read"


# -- what it returned ---------------------------------------------------------------------------


def test_one_error_through_different_tools_has_one_signature() -> None:
    cat = error_signature("Exit code 1\ncat: deploy/x.env: No such file or directory")
    head = error_signature(
        "head: cannot open 'deploy/x.env' for reading: No such file or directory"
    )
    other = error_signature("cat: deploy/y.env: No such file or directory")
    assert cat & head
    assert not cat & other
    script = error_signature("Traceback ...\nModuleNotFoundError: No module named 'requests'")
    tests = error_signature(
        "ImportError while importing test module 'tests/t.py'.\n"
        "E   ModuleNotFoundError: No module named 'requests'\n1 error in 0.21s"
    )
    assert script & tests
    assert error_signature("Exit code 1") == frozenset()  # a silent failure names nothing
    assert error_signature("1 failed, 3 passed in 2.1s") == frozenset()


def test_results_that_say_nothing_are_no_observation() -> None:
    assert observation("(Bash completed with no output)") == (None, 0)
    assert observation("   ") == (None, 0)
    digest, size = observation("pod api-7 Running since 12:00:01")
    assert digest is not None and digest == observation("pod api-7 Running since 13:10:09")[0]
    assert size > 0


# -- the rules ----------------------------------------------------------------------------------


def test_a_poll_whose_status_changes_is_not_a_repeat() -> None:
    panel = Panel()
    statuses = ["queued", "in_progress", "in_progress (3/9)", "in_progress (5/9)", "done"]
    poll = [(bash("gh run view 7 --json status"), s) for s in statuses]
    assert panel.halts(poll) is None


def test_a_tight_poll_with_the_same_answer_stops_at_its_third_call() -> None:
    panel = Panel()
    poll = [(bash("sleep 5 && gh run view 7 --json status"), "in_progress")] * 4
    assert panel.halts(poll, took=5) == 3


def test_a_poll_that_waits_is_patient_until_its_wait_budget_is_spent() -> None:
    panel = Panel(patient_round_s=30, wait_budget_s=600)
    poll = [(bash("sleep 120 && gh run view 7 --json status"), "in_progress")] * 10
    # Rounds of 120 s: the fifth round has waited 4 x 120 = 480 s, the sixth 600 s.
    assert panel.halts(poll, took=120) == 6


def test_a_change_measured_across_reads_only_is_progress_for_every_call() -> None:
    panel = Panel()
    panel.world = WorldState(files_written=(("/tmp/job.output", "page 1"),), git_tree="start")
    assert not panel.run(bash("date +%T"), "12:00:01").halt
    assert not panel.run(bash("date +%T"), "12:00:09").halt
    panel.world = WorldState(files_written=(("/tmp/job.output", "page 2"),), git_tree="start")
    assert not panel.run(bash("date +%T"), "12:00:20").halt  # a background job wrote
    assert not panel.run(bash("date +%T"), "12:00:31").halt
    assert panel.run(bash("date +%T"), "12:00:40").halt  # nothing since: the third


def test_bookkeeping_files_and_timestamps_are_not_progress() -> None:
    patterns = DEFAULT_BOOKKEEPING_FILES
    assert is_bookkeeping("agent.log", patterns)
    assert is_bookkeeping("build/logs/run.txt", patterns)
    assert is_bookkeeping("NOTES.md", patterns)
    assert not is_bookkeeping("src/notes.py", patterns)
    assert content_digest(b"built at 2026-12-01T10:00:00Z\n") == content_digest(
        b"built at 2026-12-06T13:31:07Z\n"
    )
    assert content_digest(b"TIMEOUT = 1\n") != content_digest(b"TIMEOUT = 2\n")
    panel = Panel()
    poll = bash("kubectl get deploy api")
    for round_ in range(3):
        verdict = panel.run(poll, "0/1 ready")
        panel.world = WorldState(
            files_written=(("/w/agent.log", f"log {round_}"),), git_tree="start"
        )
        if verdict.halt:
            break
    assert verdict.halt, "a log that grows between polls re-armed the rule"


def test_the_same_content_read_three_ways_stops_the_next_call() -> None:
    panel = Panel()
    text = "connect db: refused\nretrying in 5s\nconnect db: refused\nboot ok"
    assert not panel.run(bash("head -4 app.log"), text).halt
    assert not panel.run(bash("sed -n 1,4p app.log"), text).halt
    assert not panel.run(bash("awk 'NR<=4' app.log"), text).halt
    verdict = panel.run(bash("git status"), "clean")
    assert verdict.halt and verdict.record is not None and verdict.record.rule == "repeat"


def test_short_results_are_not_compared_across_calls() -> None:
    panel = Panel()
    for command in ("test -f a && echo ok", "test -d b && echo ok", "pgrep api && echo ok", "ls"):
        assert not panel.run(bash(command), "ok").halt


def test_one_error_three_ways_stops_the_next_call_unless_something_changed() -> None:
    missing = "ModuleNotFoundError: No module named 'requests'"
    panel = Panel()
    for command in ("python app.py", "python -m app", "pytest -q tests/t.py"):
        assert not panel.run(bash(command), missing, error=True).halt
    assert panel.run(bash("ls"), "app.py").halt
    changed = Panel()
    assert not changed.run(bash("python app.py"), missing, error=True).halt
    assert not changed.run(bash("python -m app"), missing, error=True).halt
    changed.world = WorldState(git_tree="installed")
    assert not changed.run(bash("pytest -q tests/t.py"), missing, error=True).halt
    assert not changed.run(bash("ls"), "app.py").halt


def test_edits_that_fail_the_same_way_are_different_errors() -> None:
    panel = Panel()
    for old in ("a = 1", "a  = 1", "a = 1 "):
        edit = call("Edit", file_path="/w/x.py", old_string=old, new_string="a = 2")
        assert not panel.run(edit, "String to replace not found in file.", error=True).halt
    assert not panel.run(bash("cat x.py"), "a=1").halt


def test_a_world_that_goes_back_and_forth_across_turns_is_no_progress() -> None:
    sentinel = Sentinel(SentinelSettings(no_progress_turns=3), clock=Clock())
    halted_at = None
    for turn in range(1, 10):
        sentinel.begin_turn(turn)
        request = bash("curl -s localhost:8080/stats")
        sentinel.observe_call(request, WorldState(git_tree="x"), root=ROOT)
        sentinel.observe_result(request.tool_use_id, is_error=False, content='{"hits": 0.1}')
        end = WorldState(git_tree="A" if turn % 2 else "B")
        if sentinel.end_turn(end, root=ROOT).halt:
            halted_at = turn
            break
    assert halted_at == 5  # A, B new; then three turns back in states already seen


def test_a_world_that_moves_on_each_turn_is_progress() -> None:
    sentinel = Sentinel(SentinelSettings(no_progress_turns=3), clock=Clock())
    for turn in range(1, 10):
        sentinel.begin_turn(turn)
        request = bash("curl -s localhost:8080/stats")
        sentinel.observe_call(request, WorldState(git_tree="x"), root=ROOT)
        sentinel.observe_result(request.tool_use_id, is_error=False, content='{"hits": 0.1}')
        assert not sentinel.end_turn(WorldState(git_tree=f"state {turn}"), root=ROOT).halt
