"""A turn's world change is measured: parts with their states before and after, bookkeeping
apart, and progress only when a work part reaches a state its chain has not seen; the tap
between a guard and its probe hands each turn's change over once."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import anyio
import pytest

from panels.host.loops.rules import BOOKKEEPING
from panels.host.loops.world import (
    GIT,
    NO_CHANGE,
    WorldTap,
    advances,
    measure_change,
    state_key,
    unmeasured,
)
from runtime.guard.sentinel import WorldState

SRC, LOG = "/w/src/a.py", "/w/logs/run.txt"


def state(
    git: str | None = "g0", files: dict[str, str] | None = None, slots: dict[str, str] | None = None
) -> WorldState:
    return WorldState(files_written=tuple((files or {}).items()),
                      slots=tuple((slots or {}).items()), git_tree=git)  # fmt: skip


def test_a_real_edit_is_work_with_its_states_before_and_after() -> None:
    got = measure_change(state(files={SRC: "h0"}), state("g1", files={SRC: "h1"}), {SRC: "h0"},
                         BOOKKEEPING)  # fmt: skip
    assert got.work == ((SRC, "h0", "h1"), (GIT, "g0", "g1")) and got.bookkeeping == ()
    assert got.any and advances(got, ()) and got.summary() == "1 file(s), the git state"


@pytest.mark.parametrize(
    ("before", "after", "kept"),
    [
        # A log by its name (and the git state it moved with it).
        (state(files={LOG: "t1"}), state("g1", files={LOG: "t2"}), (LOG, GIT)),
        # A file git does not see: the repository's state did not move.
        (state(files={SRC: "h0"}), state(files={SRC: "h1"}), (SRC,)),
        # A slot: the panel's notes.
        (state(slots={"progress": "n1"}), state(slots={"progress": "n2"}), ("slot:progress",)),
    ],
)  # fmt: skip
def test_bookkeeping_changes_are_never_progress(
    before: WorldState, after: WorldState, kept: tuple[str, ...]
) -> None:
    got = measure_change(before, after, dict(before.files_written), BOOKKEEPING)
    assert got.bookkeeping == kept and got.work == ()
    assert got.any and not advances(got, ())  # the old boolean said yes; the measure says no


def test_a_log_beside_a_real_edit_leaves_the_edit_work() -> None:
    first = state(files={SRC: "h0", LOG: "t1"})
    got = measure_change(first, state("g1", files={SRC: "h1", LOG: "t2"}),
                         dict(first.files_written), BOOKKEEPING)  # fmt: skip
    assert [p for p, _, _ in got.work] == [SRC, GIT] and got.bookkeeping == (LOG,)


def test_outside_a_repository_a_changed_file_is_work() -> None:
    first = state(None, files={SRC: "h0"})
    got = measure_change(first, state(None, files={SRC: "h1"}), {SRC: "h0"}, BOOKKEEPING)
    assert got.work == ((SRC, "h0", "h1"),) and advances(got, ())


def test_returning_to_a_state_the_chain_has_seen_is_no_progress() -> None:
    forward = measure_change(state(files={SRC: "h0"}), state("g1", files={SRC: "h1"}), {SRC: "h0"},
                             BOOKKEEPING)  # fmt: skip
    back = measure_change(state("g1", files={SRC: "h1"}), state("g0", files={SRC: "h0"}),
                          {SRC: "h1"}, BOOKKEEPING)  # fmt: skip
    seen = forward.states  # the chain saw h0 and g0 before the edit, h1 and g1 after it
    assert advances(back, ()) and not advances(back, seen)  # a revert
    assert not advances(forward, seen + back.states)  # and the redo
    elsewhere = measure_change(state("g1", files={SRC: "h1"}), state("g2", files={SRC: "h2"}),
                               {SRC: "h1"}, BOOKKEEPING)  # fmt: skip
    assert advances(elsewhere, seen + back.states)  # a new state is progress again
    assert state_key(SRC, "h2") in elsewhere.states


def test_unmeasured_turns_fall_back_on_the_guards_boolean() -> None:
    assert advances(unmeasured(True), ()) and not advances(unmeasured(False), ())
    assert not NO_CHANGE.any and not advances(NO_CHANGE, ())


class Probe:
    """A world probe that returns the states it is given, in order (our own seam)."""

    def __init__(self, states: Sequence[WorldState]) -> None:
        self.states = list(states)
        self.asked: list[tuple[str, ...]] = []

    @property
    def root(self) -> Path:
        return Path("/w")

    async def measure(self, touched: Sequence[str]) -> WorldState:
        self.asked.append(tuple(touched))
        return self.states.pop(0)

    def extra(self) -> str:
        return "the probe's own"


def test_the_tap_hands_over_each_turns_change_once() -> None:
    states = [
        state(files={SRC: "h0"}),
        state("g1", files={SRC: "h1"}),
        state("g1", files={SRC: "h1"}),
    ]
    probe = Probe(states)
    tap = WorldTap(probe)

    async def turn(calls: int) -> None:
        for _ in range(calls):
            await tap.measure((SRC,))

    anyio.run(turn, 2)  # before the call, then at the turn's end
    first = tap.take(BOOKKEEPING)
    assert first is not None and [p for p, _, _ in first.work] == [SRC, GIT]
    assert tap.take(BOOKKEEPING) is None  # a turn that made no call measured nothing
    anyio.run(turn, 1)
    again = tap.take(BOOKKEEPING)
    assert again is not None and again.work == () and not again.any
    assert probe.asked == [(SRC,)] * 3 and tap.root == Path("/w")
    assert tap.extra() == "the probe's own"  # what the tap does not know, it passes on
