"""The sentinel's rules as plain functions over the calls of a turn and the states they ran in.

The rules in words are in runtime/guard/sentinel.py's docstring; this module holds the data
they look at (`State`, `Seen`) and the checks, with no clock, no settings object and no I/O.
A check returns what fired (`Fired`: rule, message, the calls as evidence) or None.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from runtime.guard.records import CallEvidence
from sentinel_v1.calls import Effect

Fired = tuple[str, str, tuple[CallEvidence, ...]]


@dataclass(frozen=True)
class State:
    """The state a call was judged in: what the owner measured (files by content hash, the git
    state; empty and None when not measured), the outcome of every test command run so far,
    the commands with unmeasurable effects that succeeded this turn, and a counter of the
    changes assumed when the world is not measured."""

    files: Mapping[str, str] = field(default_factory=dict)
    git: str | None = None
    tests: Mapping[str, str] = field(default_factory=dict)
    opaque: frozenset[str] = frozenset()
    epoch: int = 0


# What changed before each call: (the call's number in the turn, "git" or a file path, the keys
# of the calls made since the measurement before). The rules excuse a call's own changes.
Change = tuple[int, str, frozenset[str]]


def same_state(a: State, b: State, own: str = "", excused: frozenset[str] = frozenset()) -> bool:
    """Do `a` and `b` agree on everything both measured? A file or a test seen in only one of
    them is no difference (it was first seen later). `own` is the key of the call judged: its
    own opaque commands are left out, as are the `excused` components (what only calls with
    that key changed: `own_changes`), so a call's own earlier runs never excuse running it
    again."""
    if a is b:
        return True
    if a.epoch != b.epoch or not _agree(a.tests, b.tests):
        return False
    if a.opaque != b.opaque and a.opaque - {own} != b.opaque - {own}:
        return False
    if a.git is not None and b.git is not None and a.git != b.git and "git" not in excused:
        return False
    if a.files is b.files:
        return True
    small, large = (a.files, b.files) if len(a.files) <= len(b.files) else (b.files, a.files)
    return all(
        large.get(path, digest) == digest or path in excused for path, digest in small.items()
    )


def own_changes(log: Sequence[Change], start: int, end: int, own: str) -> frozenset[str]:
    """The components that only calls keyed `own` changed between call `start` and call `end`."""
    mine: set[str] = set()
    others: set[str] = set()
    for seq, component, by in log:
        if start < seq <= end:
            (mine if by == {own} else others).add(component)
    return frozenset(mine - others)


def changed_components(before: State, after: State) -> set[str]:
    """What differs from `before` to `after`: "git" and the paths of files (both measured)."""
    out = set()
    if before.git is not None and after.git is not None and before.git != after.git:
        out.add("git")
    if before.files is not after.files:
        out.update(p for p, d in after.files.items() if before.files.get(p, d) != d)
    return out


def _agree(a: Mapping[str, str], b: Mapping[str, str]) -> bool:
    if a is b:
        return True
    small, large = (a, b) if len(a) <= len(b) else (b, a)
    return all(large.get(k, v) == v for k, v in small.items())


@dataclass
class Seen:
    """One call of the turn: its key, the state before it, what it may change, its result."""

    key: str  # tool name and canonical arguments (calls.call_key)
    seq: int  # the call's number in the turn
    state: State
    evidence: CallEvidence
    effect: Effect
    tests: bool = False  # a test command: its outcome is part of the state
    measured: bool = True  # the owner measured the world before it
    failed: bool | None = None  # None until its result is seen
    outcome: str | None = None  # digest of pass/fail and the normalised result

    @property
    def name(self) -> str:
        return self.evidence.name


def repeat(
    history: Sequence[Seen],
    candidate: Seen,
    *,
    window: int,
    threshold: int,
    log: Sequence[Change] = (),
) -> Fired | None:
    """The same call `threshold` times within the last `window` calls, each in the same state."""
    recent = history[-(window - 1) :] if window > 1 else []
    same = [s for s in recent if s.key == candidate.key and _same(s, candidate, log)]
    if len(same) + 1 < threshold:
        return None
    message = (
        f"{candidate.name} called {len(same) + 1} times with the same arguments in the last "
        f"{window} calls, with nothing changed in between; the last call was stopped before it ran"
    )
    return "repeat", message, (*(s.evidence for s in same), candidate.evidence)


def alternation(
    history: Sequence[Seen],
    candidate: Seen,
    *,
    cycles: int,
    longest: int,
    log: Sequence[Change] = (),
) -> Fired | None:
    """The last calls are `cycles` copies of one cycle of 2..`longest` calls (not all the same
    call), each call in the same state as its copy one cycle earlier."""
    if cycles == 0:
        return None
    for length in range(2, longest + 1):
        span = length * cycles
        if len(history) + 1 < span:
            return None
        run = [*history[len(history) - (span - 1) :], candidate]
        if len({s.key for s in run[:length]}) < 2:
            continue
        if all(
            run[i].key == run[i - length].key and _same(run[i - length], run[i], log)
            for i in range(length, span)
        ):
            return (
                "alternation",
                _cycle_message(run[:length], cycles),
                tuple(s.evidence for s in run),
            )
    return None


def _cycle_message(cycle: Sequence[Seen], cycles: int) -> str:
    names = " / ".join(s.name for s in cycle)
    if len(cycle) == 2:
        head = f"two calls ({names}) alternated {cycles} times"
    else:
        head = f"a cycle of {len(cycle)} calls ({names}) ran {cycles} times"
    return (
        f"{head} with nothing changed from one cycle to the next; "
        "the last call was stopped before it ran"
    )


def failing(
    history: Sequence[Seen], candidate: Seen, *, threshold: int, log: Sequence[Change] = ()
) -> Fired | None:
    """The call already failed `threshold - 1` times in the same state, the same way each time."""
    if threshold == 0:
        return None
    failed = [
        s for s in history if s.key == candidate.key and s.failed and _same(s, candidate, log)
    ]
    if len(failed) < threshold - 1:
        return None
    last = failed[len(failed) - (threshold - 1) :]
    if len({s.outcome for s in last}) != 1:
        return None
    message = (
        f"{candidate.name} already failed {len(last)} times with the same arguments and the "
        "same error, and nothing changed since; the next attempt was stopped before it ran"
    )
    return "failing", message, (*(s.evidence for s in last), candidate.evidence)


def _same(earlier: Seen, later: Seen, log: Sequence[Change]) -> bool:
    excused = own_changes(log, earlier.seq, later.seq, later.key) if log else frozenset()
    return same_state(earlier.state, later.state, later.key, excused)
