"""The Guard alone: the order of its checks, a halt that refuses the rest of the turn, and
the world state it measures for the no-progress rule."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from guard_kit import RecordingPolicy

from runtime.driver import Cost, ToolCallRequest, ToolResult
from runtime.guard.guard import Guard
from runtime.guard.settings import BudgetSettings, LimitsConfig, SentinelSettings
from runtime.guard.world import git_state

pytestmark = pytest.mark.anyio


def call(i: int, command: str = "poll") -> ToolCallRequest:
    return ToolCallRequest(f"c{i}", "Bash", {"command": command})


async def test_once_halting_every_call_of_the_turn_is_refused() -> None:
    policy = RecordingPolicy()
    guard = Guard(policy, LimitsConfig(), sentinel=True)
    assert guard.begin_turn(1) is None
    decisions = [await guard.decide(call(i)) for i in range(3)]
    other = await guard.decide(call(9, "something else"))
    assert [d.allow for d in decisions] == [True, True, False]
    assert not other.allow and other.message == decisions[2].message
    assert [c.tool_use_id for c in policy.asked] == ["c0", "c1"]
    record = guard.end_turn()
    assert record is not None and record.rule == "repeat"
    assert guard.end_turn() is record  # idempotent
    guard.resume()
    assert guard.halt is None and guard.begin_turn(2) is None
    assert (await guard.decide(call(3))).allow


async def test_the_budget_is_asked_before_the_sentinel_and_the_policy() -> None:
    policy = RecordingPolicy()
    limits = LimitsConfig(budget=BudgetSettings(max_turn_usd=1.0))
    shadowed: list[object] = []
    guard = Guard(policy, limits, sentinel=True, on_shadow=shadowed.append)
    guard.begin_turn(1)
    guard.observe(Cost(2.0))
    decision = await guard.decide(call(0))
    assert not decision.allow and decision.message.startswith("[BUDGET HALT] turn_usd")
    assert policy.asked == [] and shadowed == []


async def test_shadow_records_go_to_the_callback() -> None:
    limits = LimitsConfig(sentinel=SentinelSettings(shadow=True))
    shadowed: list[object] = []
    guard = Guard(RecordingPolicy(), limits, sentinel=True, on_shadow=shadowed.append)
    guard.begin_turn(1)
    for i in range(3):
        assert (await guard.decide(call(i))).allow
        guard.observe(ToolResult(f"c{i}", "same"))
    assert len(shadowed) == 1 and guard.end_turn() is None


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
