"""What the sentinel hands its owner when a rule fires: the rule, its message in full, the
turn, the time, the calls as evidence, and whether it was only recorded (shadow mode)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from itertools import count
from typing import Any

import pytest

from runtime.guard.records import HaltRecord
from runtime.guard.sentinel import Sentinel, SentinelVerdict, WorldState
from runtime.instance.guard_settings import SentinelSettings
from runtime.turn.driver import ToolCallRequest

ROOT = "/w"
_ids = count()


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 12, 1, 9, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


def bash(command: str) -> ToolCallRequest:
    return ToolCallRequest(tool_use_id=f"toolu_{next(_ids)}", name="Bash",
                           input={"command": command})  # fmt: skip


def read(path: str) -> ToolCallRequest:
    return ToolCallRequest(tool_use_id=f"toolu_{next(_ids)}", name="Read",
                           input={"file_path": path})  # fmt: skip


class Panel:
    """A sentinel fed as the guard feeds it; the clock stands still unless a call takes time."""

    def __init__(self, **settings: Any) -> None:
        self.clock = Clock()
        self.sentinel = Sentinel(SentinelSettings(**settings), clock=self.clock)
        self.world: WorldState | None = WorldState(git_tree="start")
        self.sentinel.begin_turn(4)
        self.sent: list[ToolCallRequest] = []

    def judge(self, request: ToolCallRequest) -> SentinelVerdict:
        """Judge a call, and leave it at that (a halted call is never run)."""
        self.sent.append(request)
        return self.sentinel.observe_call(request, self.world, root=ROOT)

    def run(
        self, request: ToolCallRequest, out: str = "", *, error: bool = False, took: float = 0
    ) -> SentinelVerdict:
        verdict = self.judge(request)
        if not verdict.halt:
            self.clock.now += timedelta(seconds=took)
            self.sentinel.observe_result(request.tool_use_id, is_error=error, content=out)
        return verdict


def boom(n: int) -> str:
    return f"RuntimeError: the cache is locked\nattempt {'x' * n}"


LONG = "a long page of output that says the same thing every time it is read\n" * 2
SCENARIOS: dict[str, tuple[list[tuple[ToolCallRequest, str, bool]], ToolCallRequest, str, str]] = {
    "repeat": (
        [(bash("curl -s ci/status"), "pending", False)] * 2,
        bash("curl -s ci/status"),
        "repeat",
        "Bash called 3 times with the same arguments in the last 8 calls, with the same result "
        "and nothing changed in between; the last call was stopped before it ran",
    ),
    "alternation": (
        [(read("/w/a.py"), "a", False), (bash("ls"), "a.py", False), (read("/w/a.py"), "a", False)],
        bash("ls"),
        "alternation",
        "two calls (Read / Bash) alternated 2 times with the same results and nothing changed "
        "from one cycle to the next; the last call was stopped before it ran",
    ),
    # the same error, worded differently each time: not a repeat, a failing call
    "failing": (
        [(bash("make cache"), boom(1), True), (bash("make cache"), boom(2), True)],
        bash("make cache"),
        "failing",
        "Bash already failed 2 times with the same arguments and the same error, and nothing "
        "changed since; the next attempt was stopped before it ran",
    ),
    "same error": (
        [(bash("make a"), boom(1), True), (bash("make b"), boom(2), True),
         (bash("make c"), boom(3), True)],
        bash("ls"),
        "failing",
        "the same error came back 3 times (Bash) with nothing changed in between, whichever way "
        "it was asked; the next call was stopped before it ran",
    ),
    "same content": (
        [(bash("cat a.txt"), LONG, False), (bash("head -2 a.txt"), LONG, False),
         (read("/w/a.txt"), LONG, False)],
        bash("ls"),
        "repeat",
        "3 differently written reads (Bash, Read) returned the same content with nothing changed "
        "in between; the next call was stopped before it ran",
    ),
}  # fmt: skip


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_each_rule_halts_with_its_message_and_evidence(scenario: str) -> None:
    calls, last, rule, message = SCENARIOS[scenario]
    panel = Panel()
    for request, out, error in calls:
        assert not panel.run(request, out, error=error).halt
    panel.clock.now += timedelta(minutes=1)
    verdict = panel.judge(last)
    assert verdict.halt
    record = verdict.record
    assert record is not None
    assert (record.source, record.rule, record.message) == ("sentinel", rule, message)
    assert (record.turn, record.at, record.shadow) == (4, panel.clock.now, False)
    # A rule that judges results found the loop in the last result: the call it stopped is
    # no evidence. The others name the stopped call last, its result unknown.
    judged_before = scenario not in ("same error", "same content")
    evidence = [(r.tool_use_id, error) for r, _, error in calls]
    if judged_before:
        evidence.append((last.tool_use_id, None))
    assert [(c.tool_use_id, c.failed) for c in record.calls] == evidence


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_in_shadow_mode_each_rule_is_recorded_and_nothing_stops(scenario: str) -> None:
    calls, last, rule, message = SCENARIOS[scenario]
    panel = Panel(shadow=True)
    for request, out, error in calls:
        assert not panel.run(request, out, error=error).halt
    verdict = panel.judge(last)
    assert not verdict.halt
    assert verdict.record is not None
    assert (verdict.record.rule, verdict.record.message, verdict.record.shadow) == (
        rule,
        message,
        True,
    )


def test_in_shadow_mode_a_loop_goes_on_being_recorded() -> None:
    panel = Panel(shadow=True)
    rounds = [panel.run(bash("curl -s ci/status"), "pending") for _ in range(5)]
    records = [v.record for v in rounds]
    assert [r is None for r in records] == [True, True, False, False, False]
    assert [r.message.split(" times")[0] for r in records if r] == [
        "Bash called 3",
        "Bash called 4",
        "Bash called 5",
    ]


def test_a_result_found_to_loop_stops_only_the_next_call() -> None:
    calls, last, _, message = SCENARIOS["same error"]
    panel = Panel(shadow=True)
    for request, out, error in calls:
        panel.run(request, out, error=error)
    first = panel.run(last, "ok")
    assert first.record is not None and first.record.message == message
    assert panel.run(bash("pwd"), "/w").record is None


def test_a_frozen_clock_waits_for_nothing() -> None:
    # The polls ask to wait, but took no time: no waiting to report, no patience.
    panel = Panel()
    for _ in range(2):
        assert not panel.run(bash("sleep 30 && curl -s ci/status"), "pending").halt
    verdict = panel.judge(bash("sleep 30 && curl -s ci/status"))
    assert verdict.record is not None
    assert verdict.record.message.endswith("nothing changed in between; the last call was "
                                           "stopped before it ran")  # fmt: skip


def test_a_poll_reports_the_time_it_really_waited() -> None:
    panel = Panel(patient_round_s=100)
    for took in (12.0, 9.0):
        assert not panel.run(bash("sleep 30 && curl -s ci/status"), "pending", took=took).halt
    verdict = panel.judge(bash("sleep 30 && curl -s ci/status"))
    assert verdict.record is not None
    assert "in between (21 s spent waiting); the last call" in verdict.record.message


def test_a_clock_that_goes_back_counts_no_waiting() -> None:
    panel = Panel(patient_round_s=1)
    for _ in range(2):
        assert not panel.run(bash("sleep 30 && curl -s ci/status"), "pending", took=-50).halt
    verdict = panel.judge(bash("sleep 30 && curl -s ci/status"))
    assert verdict.halt and verdict.record is not None
    assert "spent waiting" not in verdict.record.message


def end_turns(panel: Panel, ends: list[WorldState], *, calls: int = 1) -> list[SentinelVerdict]:
    verdicts = []
    for turn, end in enumerate(ends, 1):
        panel.sentinel.begin_turn(turn)
        for n in range(calls):
            panel.run(read(f"/w/f{n}.md"), "ok")
        verdicts.append(panel.sentinel.end_turn(end, root=ROOT))
    return verdicts


def test_no_progress_says_how_many_turns_stalled() -> None:
    panel = Panel(no_progress_turns=3)
    verdicts = end_turns(panel, [WorldState(git_tree="same")] * 4)
    assert [v.halt for v in verdicts] == [False, False, False, True]
    record = verdicts[-1].record
    assert isinstance(record, HaltRecord)
    assert (record.rule, record.turn, record.shadow) == ("no_progress", 4, False)
    assert record.message == (
        "3 turns in a row made tool calls, ended in a state already seen (files, git tree, "
        "test outcomes; bookkeeping does not count) and learnt nothing new (everything they "
        "read had been read before)"
    )
    assert [c.tool_use_id for c in record.calls] == [panel.sent[-1].tool_use_id]
    assert panel.sentinel.turn == 5


def test_no_progress_names_the_last_fifty_calls_of_the_turn() -> None:
    panel = Panel(no_progress_turns=1)
    verdicts = end_turns(panel, [WorldState(git_tree="same")] * 2, calls=60)
    record = verdicts[-1].record
    assert record is not None
    assert [c.tool_use_id for c in record.calls] == [r.tool_use_id for r in panel.sent[-50:]]


def test_no_progress_in_shadow_mode_records_and_counts_again() -> None:
    panel = Panel(no_progress_turns=2, shadow=True)
    verdicts = end_turns(panel, [WorldState(git_tree="same")] * 6)
    assert [v.halt for v in verdicts] == [False] * 6
    assert [v.record is not None for v in verdicts] == [False, False, True, False, True, False]
    assert all(v.record.shadow for v in verdicts if v.record)


def test_no_progress_is_off_at_zero_and_without_a_measured_world() -> None:
    panel = Panel(no_progress_turns=0)
    assert not any(v.halt for v in end_turns(panel, [WorldState(git_tree="same")] * 4))
    assert panel.sentinel.turn == 5
    panel = Panel(no_progress_turns=1)
    for turn in range(1, 4):
        panel.sentinel.begin_turn(turn)
        panel.run(read("/w/a.md"), "ok")
        assert panel.sentinel.end_turn(None) == SentinelVerdict()
