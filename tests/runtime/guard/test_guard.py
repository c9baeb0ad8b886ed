"""The Guard alone: the order of its checks, a halt that refuses the rest of the turn, the
owner's checks, and the world state it measures for the sentinel."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from guard_kit import RecordingPolicy

from runtime.guard.guard import Guard, GuardSettings, Refusal, TurnTally
from runtime.guard.records import HaltRecord
from runtime.guard.world import git_state
from runtime.instance.guard_settings import BudgetSettings, LimitsConfig, SentinelSettings
from runtime.turn.driver import Cost, ToolCallRequest, ToolResult

pytestmark = pytest.mark.anyio


def call(i: int, command: str = "poll") -> ToolCallRequest:
    return ToolCallRequest(f"c{i}", "Bash", {"command": command})


async def test_once_halting_every_call_of_the_turn_is_refused() -> None:
    policy = RecordingPolicy()
    guard = Guard(policy, GuardSettings(LimitsConfig(), sentinel=True))
    assert guard.begin_turn(1) is None
    decisions = [await guard.decide(call(i)) for i in range(3)]
    other = await guard.decide(call(9, "something else"))
    assert [d.allow for d in decisions] == [True, True, False]
    assert not other.allow and other.message == decisions[2].message
    assert [c.tool_use_id for c in policy.asked] == ["c0", "c1"]
    record = await guard.finish_turn()
    assert record is not None and record.rule == "repeat"
    assert await guard.finish_turn() is record  # idempotent
    assert guard.begin_turn(2) is record  # halted: no turn runs until resumed
    assert guard.resume() is record
    assert guard.halted is None and guard.begin_turn(2) is None
    assert (await guard.decide(call(3))).allow


async def test_the_budget_is_asked_before_the_sentinel_and_the_policy() -> None:
    policy = RecordingPolicy()
    limits = LimitsConfig(budget=BudgetSettings(max_turn_usd=1.0))
    shadowed: list[object] = []
    guard = Guard(policy, GuardSettings(limits))
    guard.on_record.append(shadowed.append)
    guard.begin_turn(1)
    guard.observe(Cost(2.0))
    decision = await guard.decide(call(0))
    assert not decision.allow and decision.message.startswith("[BUDGET HALT] turn_usd")
    assert policy.asked == [] and [r.rule for r in shadowed] == ["turn_usd"]  # type: ignore[attr-defined]


async def test_shadow_records_go_to_the_callback() -> None:
    limits = LimitsConfig(sentinel=SentinelSettings(shadow=True))
    shadowed: list[HaltRecord] = []
    guard = Guard(RecordingPolicy(), GuardSettings(limits))
    guard.on_record.append(shadowed.append)
    guard.begin_turn(1)
    for i in range(3):
        assert (await guard.decide(call(i))).allow
        guard.observe(ToolResult(f"c{i}", "same"))
    assert len(shadowed) == 1 and shadowed[0].shadow and await guard.finish_turn() is None


async def test_git_state_follows_the_working_tree(tmp_path: Path) -> None:
    assert await git_state(tmp_path) is None  # not a repository
    repo = tmp_path / "repo"
    repo.mkdir()
    await anyio.run_process(["git", "init", "-q", str(repo)])
    (repo / "a.txt").write_text("one\n", encoding="utf-8")
    untracked = await git_state(repo)
    assert untracked is not None and untracked == await git_state(repo)
    (repo / "a.txt").write_text("two, longer\n", encoding="utf-8")
    changed = await git_state(repo)
    assert changed not in (None, untracked)
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    await anyio.run_process([*git, "add", "a.txt"])
    await anyio.run_process([*git, "commit", "-q", "-m", "one"])
    committed = await git_state(repo)
    assert committed not in (None, changed) and committed == await git_state(repo)
    (repo / "a.txt").write_text("three, longer\n", encoding="utf-8")
    assert await git_state(repo) not in (None, committed)


class Terminal:
    """An owner's check: refuses calls after a terminal send, halts past a team limit."""

    def __init__(self) -> None:
        self.sent = False
        self.over = False
        self.tallies: list[TurnTally] = []

    def before_turn(self) -> HaltRecord | None:
        return self._team() if self.over else None

    def before_call(self, call: ToolCallRequest) -> Refusal | None:
        if self.over:
            return Refusal("over", self._team())
        return Refusal("your turn is over") if self.sent else None

    def after_turn(self, tally: TurnTally) -> HaltRecord | None:
        self.tallies.append(tally)
        return None

    def _team(self) -> HaltRecord:
        from datetime import UTC, datetime

        return HaltRecord("budget", "team_usd", "the team is over budget", 0, datetime.now(UTC))


async def test_owner_checks_refuse_a_call_or_halt_the_panel_before_the_policy() -> None:
    policy = RecordingPolicy()
    check = Terminal()
    guard = Guard(policy, GuardSettings(sentinel=False), checks=[check])
    assert guard.begin_turn(1) is None
    assert (await guard.decide(call(0, "a"))).allow
    check.sent = True
    refused = await guard.decide(call(1, "b"))
    assert not refused.allow and refused.message == "your turn is over"
    assert guard.halted is None  # a refusal, not a halt
    assert await guard.finish_turn() is None
    assert [(t.turn, t.tool_calls, t.changed_world) for t in check.tallies] == [(1, 1, False)]
    check.sent, check.over = False, True
    assert guard.begin_turn(2) is not None and guard.halted is not None
    assert guard.halted.rule == "team_usd" and [c.tool_use_id for c in policy.asked] == ["c0"]


async def test_an_outside_halt_refuses_the_next_call_and_the_next_turn() -> None:
    from datetime import UTC, datetime

    guard = Guard(RecordingPolicy(), GuardSettings(sentinel=False))
    guard.begin_turn(1)
    record = HaltRecord("sentinel", "operator_halt", "stop", 0, datetime.now(UTC))
    guard.halt_now(record)
    refused = await guard.decide(call(0))
    assert not refused.allow and "operator_halt" in refused.message
    assert await guard.finish_turn() is record and guard.begin_turn(2) is record
