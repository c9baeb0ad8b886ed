"""What the state a call is judged in is made of, each part shown to matter: test outcomes
(the sentinel's own and the owner's), opaque commands, changes assumed without a measured
world, files relative to the working directory, and who made a change."""

from __future__ import annotations

from datetime import UTC
from itertools import count
from typing import Any

import pytest

from runtime.guard.calls import call_key
from runtime.guard.sentinel import Sentinel, SentinelVerdict, WorldState
from runtime.instance.guard_settings import SentinelSettings
from runtime.turn.driver import ToolCallRequest

ROOT = "/w"
_ids = count()
MEASURED = WorldState(git_tree="g")


def call(name: str, **args: Any) -> ToolCallRequest:
    return ToolCallRequest(tool_use_id=f"toolu_{next(_ids)}", name=name, input=args)


def bash(command: str) -> ToolCallRequest:
    return call("Bash", command=command)


class Panel:
    def __init__(self, root: str = ROOT, **settings: Any) -> None:
        self.sentinel = Sentinel(SentinelSettings(**settings))  # the real clock
        self.root = root
        self.sentinel.begin_turn(1)

    def run(
        self, request: ToolCallRequest, world: WorldState | None, out: str = "", *,
        error: bool = False,
    ) -> SentinelVerdict:  # fmt: skip
        verdict = self.sentinel.observe_call(request, world, root=self.root)
        if not verdict.halt:
            self.sentinel.observe_result(request.tool_use_id, is_error=error, content=out)
        return verdict

    def poll(self, world: WorldState | None) -> bool:
        return self.run(bash("kubectl get pods"), world, "api 0/1 Pending").halt


@pytest.mark.parametrize("world", [MEASURED, None], ids=["measured", "unmeasured"])
@pytest.mark.parametrize(("second_run", "halts"), [("1 passed", False), ("1 failed", True)])
def test_a_test_whose_outcome_changed_is_progress(
    world: WorldState | None, second_run: str, halts: bool
) -> None:
    panel = Panel()
    assert not panel.run(bash("pytest -q tests/a.py"), world, "1 failed", error=True).halt
    assert not panel.poll(world)
    assert not panel.poll(world)
    passed = second_run == "1 passed"
    assert not panel.run(bash("pytest -q tests/a.py"), world, second_run, error=not passed).halt
    assert panel.poll(world) is halts


@pytest.mark.parametrize(("outcome", "halts"), [("pass", False), ("fail", True)])
def test_the_owners_test_outcomes_are_part_of_the_state(outcome: str, halts: bool) -> None:
    panel = Panel()
    before = WorldState(test_results=(("tests/a.py::t", "fail"),), git_tree="g")
    after = WorldState(test_results=(("tests/a.py::t", outcome),), git_tree="g")
    assert [panel.poll(before), panel.poll(before), panel.poll(after)] == [False, False, halts]


@pytest.mark.parametrize(("install_fails", "halts"), [(False, False), (True, True)])
def test_an_opaque_command_that_succeeded_is_a_change_without_a_measured_world(
    install_fails: bool, halts: bool
) -> None:
    panel = Panel()
    assert not panel.poll(None)
    assert not panel.poll(None)
    assert not panel.run(bash("pip install kubernetes"), None, error=install_fails).halt
    assert panel.poll(None) is halts


@pytest.mark.parametrize(("edit_fails", "halts"), [(False, False), (True, True)])
def test_an_unmeasured_edit_between_measured_polls_is_a_change(
    edit_fails: bool, halts: bool
) -> None:
    panel = Panel()
    for n in range(2):
        assert not panel.poll(MEASURED)
        edit = call("Edit", file_path="/w/deploy.yaml", old_string=f"v{n}", new_string=f"v{n + 1}")
        assert not panel.run(edit, None, error=edit_fails).halt
    assert panel.poll(MEASURED) is halts


def files(**contents: str) -> WorldState:
    return WorldState(files_written=tuple(sorted(contents.items())), git_tree="g")


def test_files_are_bookkeeping_by_their_path_in_the_working_directory() -> None:
    # The panel works in a folder called `logs`: its own files are not log files.
    panel = Panel(root="/srv/logs")
    worlds = [files(**{"/srv/logs/app.py": f"v{n}"}) for n in range(3)]
    assert [panel.poll(w) for w in worlds] == [False, False, False]
    # ... while a log it keeps is.
    panel = Panel(root="/srv/logs")
    worlds = [files(**{"/srv/logs/logs/run.txt": f"v{n}"}) for n in range(3)]
    assert [panel.poll(w) for w in worlds] == [False, False, True]


def test_turns_that_change_files_of_the_working_directory_are_progress() -> None:
    panel = Panel(root="/srv/logs", no_progress_turns=1)
    halts = []
    for turn in range(1, 5):
        panel.sentinel.begin_turn(turn)
        panel.run(bash("ls"), None, "app.py")
        end = files(**{"/srv/logs/app.py": f"v{turn}", "/srv/logs/logs/run.txt": "same"})
        halts.append(panel.sentinel.end_turn(end, root="/srv/logs").halt)
    assert halts == [False] * 4
    for turn in range(5, 7):
        panel.sentinel.begin_turn(turn)
        panel.run(bash("ls"), None, "app.py")
        end = files(**{"/srv/logs/app.py": "v4", "/srv/logs/logs/run.txt": f"log {turn}"})
        halts.append(panel.sentinel.end_turn(end, root="/srv/logs").halt)
    assert halts[4:] == [True, True]


@pytest.mark.parametrize(("outcome", "halts"), [("pass", False), ("fail", True)])
def test_turns_whose_test_outcomes_changed_are_progress(outcome: str, halts: bool) -> None:
    panel = Panel(no_progress_turns=1)
    verdicts = []
    for turn, result in enumerate(("fail", outcome), 1):
        panel.sentinel.begin_turn(turn)
        panel.run(bash("ls"), None, "app.py")
        end = WorldState(test_results=(("tests/a.py::t", result),), git_tree="g")
        verdicts.append(panel.sentinel.end_turn(end, root=ROOT).halt)
    assert verdicts == [False, halts]


def test_an_unmeasured_note_between_appends_does_not_excuse_them() -> None:
    # What changed before a measured call was made by the calls since the last measurement
    # that may change something; a note is not one of them.
    panel = Panel()
    verdicts = []
    for n in range(3):
        world = files(**{"/w/ticks.txt": "tick\n" * n})
        verdicts.append(panel.run(bash("echo tick >> ticks.txt"), world))
        note = call("mcp__mnemara__upsert_slot", label="ticks", content=f"{n + 1} ticks")
        panel.run(note, None)
    assert [v.halt for v in verdicts] == [False, False, True]


def test_a_record_names_each_call_by_its_arguments_and_is_stamped_in_utc() -> None:
    panel = Panel()
    assert panel.sentinel.turn == 1
    fresh = Sentinel(SentinelSettings())
    assert fresh.turn == 1  # before any turn began
    request = bash("kubectl  get pods")
    for _ in range(2):
        fresh.observe_call(request, None, root=ROOT)
    record = fresh.observe_call(request, None, root=ROOT).record
    assert record is not None
    assert record.turn == 1
    assert record.at.tzinfo is UTC
    assert [c.arguments for c in record.calls] == [call_key("Bash", request.input)] * 3
