"""What the sentinel remembers and for how long: who changed the git state, the calls of a
turn (512), the states turns ended in (64) and what was observed (4096)."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime
from itertools import count

import pytest

from runtime.guard.sentinel import Sentinel, SentinelVerdict, WorldState
from runtime.instance.guard_settings import SentinelSettings
from runtime.turn.driver import ToolCallRequest

ROOT = "/w"
NOON = datetime(2026, 12, 1, 12, tzinfo=UTC)
_ids = count()


def bash(command: str) -> ToolCallRequest:
    return ToolCallRequest(tool_use_id=f"toolu_{next(_ids)}", name="Bash",
                           input={"command": command})  # fmt: skip


def make(**settings: int) -> Sentinel:
    sentinel = Sentinel(SentinelSettings(**settings), clock=lambda: NOON)
    sentinel.begin_turn(1)
    return sentinel


def run(
    sentinel: Sentinel, command: str, world: WorldState | None, out: str = "ok", *,
    error: bool = False,
) -> SentinelVerdict:  # fmt: skip
    request = bash(command)
    verdict = sentinel.observe_call(request, world, root=ROOT)
    if not verdict.halt:
        sentinel.observe_result(request.tool_use_id, is_error=error, content=out)
    return verdict


@pytest.mark.parametrize(("moved_by_the_commit", "halts"), [(True, True), (False, False)])
def test_a_commit_that_only_moves_the_git_state_is_still_a_repeat(
    moved_by_the_commit: bool, halts: bool
) -> None:
    """Each commit moves HEAD and nothing else. Moved by the commit itself, that is no
    progress for the commit; moved by someone else (seen across a read), it is."""
    sentinel = make()
    commit = "git commit --allow-empty -m wip"
    verdicts = []
    for n in range(3):
        verdicts.append(run(sentinel, commit, WorldState(git_tree=f"g{n}")))
        after = n + 1 if moved_by_the_commit else n
        run(sentinel, "git log -1", WorldState(git_tree=f"g{after}"), "wip")
        if not moved_by_the_commit:
            sentinel.observe_call(bash("cat notes.txt"), WorldState(git_tree=f"g{n + 1}"))
    assert [v.halt for v in verdicts] == [False, False, halts]
    if halts:
        record = verdicts[-1].record
        assert record is not None and record.rule == "repeat"


def test_a_result_seen_in_the_turn_is_remembered_for_512_calls() -> None:
    sentinel = make(failure_threshold=2)
    assert not run(sentinel, "make", None, "Error: no rule", error=True).halt

    def read(n: int) -> None:
        request = ToolCallRequest(tool_use_id=f"toolu_{next(_ids)}", name="Read",
                                  input={"file_path": f"/w/f{n}"})  # fmt: skip
        assert not sentinel.observe_call(request, None, root=ROOT).halt
        sentinel.observe_result(request.tool_use_id, is_error=False, content="ok")

    for n in range(511):
        read(n)
    assert run(sentinel, "make", None).halt  # the failure is the 512th call back
    read(511)
    assert not run(sentinel, "make", None).halt  # ... now the 513th: forgotten


def turns(sentinel: Sentinel, ends: list[str]) -> list[bool]:
    halts = []
    for turn, end in enumerate(ends, 1):
        sentinel.begin_turn(turn)
        run(sentinel, "ls", None)
        halts.append(sentinel.end_turn(WorldState(git_tree=end), root=ROOT).halt)
    return halts


def test_the_last_64_end_states_are_remembered() -> None:
    sentinel = make(no_progress_turns=1)
    # 64 new states, then the first again: seen within the last 64, no progress.
    assert turns(sentinel, [f"s{n}" for n in range(64)] + ["s0"]) == [False] * 64 + [True]
    sentinel = make(no_progress_turns=1)
    # 65 new states: the first is forgotten, going back to it is a change.
    assert turns(sentinel, [f"s{n}" for n in range(65)] + ["s0"]) == [False] * 66


WORDS = ["".join(w) for w in itertools.product("ghijklmnopqrstuvwxyz", repeat=3)]


def test_the_last_4096_observations_are_remembered() -> None:
    sentinel = make(no_progress_turns=1)
    end = WorldState(git_tree="same")
    # Turn 1 learns 4097 error lines; the first of them is forgotten.
    lines = [f"Error: missing {w}" for w in WORDS[:4097]]
    for n, start in enumerate(range(0, 4097, 800)):
        run(sentinel, f"make part{n}", None, "\n".join(lines[start : start + 800]), error=True)
    assert not sentinel.end_turn(end, root=ROOT).halt
    sentinel.begin_turn(2)
    run(sentinel, "make again", None, lines[1], error=True)  # still known: nothing learnt
    assert sentinel.end_turn(end, root=ROOT).halt
    sentinel.begin_turn(3)
    run(sentinel, "make again", None, lines[0], error=True)  # forgotten: learnt again
    assert not sentinel.end_turn(end, root=ROOT).halt
