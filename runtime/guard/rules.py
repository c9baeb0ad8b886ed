"""The sentinel's rules as plain functions over the calls of a turn and the states they ran in.

The rules in words are in runtime/guard/sentinel.py's docstring; this module holds the data
they look at (`State`, `Seen`, `Patience`) and the checks, with no clock, no settings object
and no I/O: times come in on the calls. A check returns what fired (`Fired`: rule, message,
the calls as evidence) or None.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from runtime.guard.calls import OBSERVATION_CHARS, Effect
from runtime.guard.records import CallEvidence

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

    key: str  # what the call does (identity.call_identity)
    seq: int  # the call's number in the turn
    state: State
    evidence: CallEvidence
    effect: Effect
    tests: bool = False  # a test command: its outcome is part of the state
    measured: bool = True  # the owner measured the world before it
    failed: bool | None = None  # None until its result is seen
    outcome: str | None = None  # digest of pass/fail and the normalised result
    observed: str | None = None  # digest of the normalised content (calls.observation)
    observed_chars: int = 0  # its length
    signature: frozenset[str] = frozenset()  # a failure's error lines (calls.error_signature)
    waits: bool = False  # asks to wait (calls.wait_seconds)
    started: datetime | None = None
    seconds: float | None = None  # how long it took, once its result is seen

    @property
    def name(self) -> str:
        return self.evidence.name


@dataclass(frozen=True)
class Patience:
    """A poll that waits is given time: rounds that waited `per_round` seconds each (in calls
    that wait) may repeat the same outcome until they have waited `budget` seconds."""

    per_round: float = 30.0
    budget: float = 1800.0

    def excuses(self, span: Sequence[Seen], rounds: int) -> bool:
        waited = waited_in(span)
        return rounds > 0 and self.per_round * rounds <= waited < self.budget


def waited_in(span: Sequence[Seen]) -> float:
    """Seconds spent in the calls of `span` that wait."""
    return sum(s.seconds or 0.0 for s in span if s.waits)


def _unchanged(calls: list[Seen]) -> list[Seen]:
    """The last of `calls` whose outcomes agree (an outcome not yet known agrees with any):
    a poll whose result changed starts again from the change."""
    run: list[Seen] = []
    outcome: str | None = None
    for s in reversed(calls):
        if s.outcome is not None:
            if outcome is not None and s.outcome != outcome:
                break
            outcome = s.outcome
        run.append(s)
    return run[::-1]


def repeat(
    history: Sequence[Seen],
    candidate: Seen,
    *,
    window: int,
    threshold: int,
    log: Sequence[Change] = (),
    patience: Patience = Patience(),
) -> Fired | None:
    """The same call `threshold` times within the last `window` calls, each in the same state,
    the earlier ones with the same outcome; a poll that waits has `patience`."""
    recent = history[-(window - 1) :] if window > 1 else []
    loop = _unchanged([s for s in history if s.key == candidate.key and _same(s, candidate, log)])
    same = [s for s in loop if s.seq >= (recent[0].seq if recent else candidate.seq)]
    if len(same) + 1 < threshold:
        return None
    # Patience is judged over the whole loop, not only the window: a budget is spent in all.
    span = _from(list(history), loop[0])
    if patience.excuses(span, len(loop)):
        return None
    message = (
        f"{candidate.name} called {len(same) + 1} times with the same arguments in the last "
        f"{window} calls, with the same result and nothing changed in between"
        f"{_waited(span)}; the last call was stopped before it ran"
    )
    return "repeat", message, (*(s.evidence for s in same), candidate.evidence)


def _from(calls: list[Seen], first: Seen) -> list[Seen]:
    """`calls` from `first` on (by identity: two calls can be equal)."""
    start = next((i for i, s in enumerate(calls) if s is first), 0)
    return calls[start:]


def _waited(span: Sequence[Seen]) -> str:
    waited = waited_in(span)
    return f" ({waited:.0f} s spent waiting)" if waited >= 1 else ""


def alternation(
    history: Sequence[Seen],
    candidate: Seen,
    *,
    cycles: int,
    longest: int,
    log: Sequence[Change] = (),
    patience: Patience = Patience(),
) -> Fired | None:
    """The last calls are `cycles` copies of one cycle of 2..`longest` calls (not all the same
    call), each call in the same state and with the same outcome as its copy one cycle
    earlier; a cycle that waits has `patience`."""
    if cycles == 0:
        return None
    for length in range(2, longest + 1):
        span = length * cycles
        if len(history) + 1 < span:
            return None
        run = [*history[len(history) - (span - 1) :], candidate]
        if len({s.key for s in run[:length]}) < 2:
            continue
        if not all(_copies(run[i - length], run[i], log) for i in range(length, span)):
            continue
        # The whole loop, back to where its cycle began: patience is judged over all of it.
        loop = [*history, candidate]
        start = len(loop) - span
        while start > 0 and _copies(loop[start - 1], loop[start - 1 + length], log):
            start -= 1
        done = loop[start:-1]
        if patience.excuses(done, (len(done) + 1) // length - 1):
            continue
        return (
            "alternation",
            _cycle_message(run[:length], cycles) + _waited(done),
            tuple(s.evidence for s in run),
        )
    return None


def _copies(earlier: Seen, later: Seen, log: Sequence[Change]) -> bool:
    """Is `later` the same call as `earlier`, in the same state, with the same outcome?"""
    return (
        later.key == earlier.key
        and _same(earlier, later, log)
        and _outcomes_agree(earlier.outcome, later.outcome)
    )


def _outcomes_agree(a: str | None, b: str | None) -> bool:
    return a is None or b is None or a == b


def _cycle_message(cycle: Sequence[Seen], cycles: int) -> str:
    names = " / ".join(s.name for s in cycle)
    if len(cycle) == 2:
        head = f"two calls ({names}) alternated {cycles} times"
    else:
        head = f"a cycle of {len(cycle)} calls ({names}) ran {cycles} times"
    return (
        f"{head} with the same results and nothing changed from one cycle to the next; "
        "the last call was stopped before it ran"
    )


def failing(
    history: Sequence[Seen],
    candidate: Seen,
    *,
    threshold: int,
    log: Sequence[Change] = (),
    patience: Patience = Patience(),
) -> Fired | None:
    """The call already failed `threshold - 1` times in the same state, the same way each time
    (by error signature, else by its whole outcome); retries that back off have `patience`."""
    if threshold == 0:
        return None
    failed = [
        s for s in history if s.key == candidate.key and s.failed and _same(s, candidate, log)
    ]
    if len(failed) < threshold - 1:
        return None
    last = failed[len(failed) - (threshold - 1) :]
    signatures = [s.signature for s in last]
    if all(signatures):
        if not frozenset.intersection(*signatures):
            return None
    elif len({s.outcome for s in last}) != 1:
        return None
    if patience.excuses(_from(list(history), last[0]), len(last)):
        return None
    message = (
        f"{candidate.name} already failed {len(last)} times with the same arguments and the "
        "same error, and nothing changed since; the next attempt was stopped before it ran"
    )
    return "failing", message, (*(s.evidence for s in last), candidate.evidence)


def same_error(
    history: Sequence[Seen],
    latest: Seen,
    *,
    threshold: int,
    log: Sequence[Change] = (),
    patience: Patience = Patience(),
) -> Fired | None:
    """`latest` just failed with an error signature that `threshold - 1` earlier calls of the
    turn failed with too, in the same state, whatever the calls were; retries that back off
    have `patience`."""
    if threshold == 0 or not latest.failed or not latest.signature:
        return None
    common, alike = latest.signature, list[Seen]()
    for s in reversed(history):
        if len(alike) + 1 >= threshold:
            break
        if s is latest or not s.failed or not (s.signature & common):
            continue
        if _same(s, latest, log):
            common &= s.signature
            alike.append(s)
    if len(alike) + 1 < threshold:
        return None
    calls = (*reversed(alike), latest)
    if patience.excuses(_from(list(history), calls[0]), len(calls) - 1):
        return None
    names = ", ".join(dict.fromkeys(s.name for s in calls))
    message = (
        f"the same error came back {len(calls)} times ({names}) with nothing changed in "
        "between, whichever way it was asked; the next call was stopped before it ran"
    )
    return "failing", message, tuple(s.evidence for s in calls)


def same_observation(
    history: Sequence[Seen],
    latest: Seen,
    *,
    window: int,
    threshold: int,
    log: Sequence[Change] = (),
    patience: Patience = Patience(),
) -> Fired | None:
    """`latest`, a read, returned what `threshold - 1` other reads of the last `window` calls
    returned too, in the same state, and they were not all the same call (that is `repeat`)."""
    if latest.effect != "read" or latest.failed or latest.observed_chars < OBSERVATION_CHARS:
        return None
    recent = list(history[-window:])
    alike = [
        s
        for s in recent
        if s is not latest and s.observed == latest.observed and not s.failed
        and _same(s, latest, log)
    ]  # fmt: skip
    if len(alike) + 1 < threshold or len({s.key for s in (*alike, latest)}) < 2:
        return None
    span = _from(recent, alike[0])
    if patience.excuses(span, len(alike)):
        return None
    names = ", ".join(dict.fromkeys(s.name for s in (*alike, latest)))
    message = (
        f"{len(alike) + 1} differently written reads ({names}) returned the same content with "
        "nothing changed in between; the next call was stopped before it ran"
    )
    return "repeat", message, (*(s.evidence for s in alike), latest.evidence)


def _same(earlier: Seen, later: Seen, log: Sequence[Change]) -> bool:
    excused = own_changes(log, earlier.seq, later.seq, later.key) if log else frozenset()
    return same_state(earlier.state, later.state, later.key, excused)
