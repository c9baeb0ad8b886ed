"""The runtime sentinel: stops a tool-call loop before the looping call runs.

Deterministic rules over what the calls are, what they returned and what they changed, never
over wording. Each call is judged before it runs, by its key and the state it would run in.

Key (calls.py): the tool name and its canonical arguments. Key order is canonical and
whitespace is significant (an Edit retried with corrected indentation is another call);
Bash commands are parsed and respelt, wait lengths (`sleep 5` / `sleep 10`, `--timeout=30`,
a `timeout`/`wait`/`seconds`/`delay` input) and timestamps become placeholders, and each run
of option words is sorted (`pytest -x -q` is `pytest -q -x`), positional words kept in place.

State (rules.State): the world as the owner measured it just before the call (world.py: the
content hash of every file a call named, Bash commands included, and the git state), plus
what the sentinel learnt from results: the outcome of every test command (pass/fail and its
normalised output) and the opaque commands that succeeded this turn. Two states are the same
when they agree on everything both measured (a file or test seen for the first time is no
change), leaving out what only the judged call's own earlier runs changed (a file it appends
to, the git state it alone moved, its own opaque command): a call's own effects never excuse
running it again. So a Write that leaves the bytes as they were is no progress, a `sed -i`
or a `git add` is progress for the calls after it, and an edit undone puts the world back in
a state already seen.
- Notes are not progress: slots are never compared, and the bookkeeping tools
  (`settings.bookkeeping_tools`: memory, slots, todo list, window care) change nothing for
  the rules and are invisible to the other calls' repeat and alternation windows, so a
  note written between two polls does not hide the loop.
- Opaque commands: a call whose effects cannot be measured (a Bash command that is neither a
  known read nor a test: pip/npm install, a script, `git push`, the network with a body; an
  external tool) counts as a change once per distinct key per turn when it succeeds, for
  every call but itself: `pip install x` then the failing test again is a new attempt, while
  `pip install x` three times is still a repeat.
- Unmeasured world (the owner passed None): a successful call to a tool in
  `settings.mutating_tools` (bookkeeping tools excepted) counts as a change, as before.

Rules within a turn (the history resets when the turn ends):
- repeat:       the candidate's key was seen `repeat_threshold - 1` times within the last
                `window - 1` calls, each in the same state: the call `repeat_threshold`
                (3: a polling loop's third call) is stopped;
- alternation:  the last `alternation_cycles * L` calls, the candidate included, repeat one
                cycle of L calls (2 <= L <= `max_cycle_length`, not all one call), each call
                in the same state as its copy one cycle earlier: A/B/A/B, A/B/C/A/B/C, an edit
                and its undo;
- failing:      the candidate's key already failed `failure_threshold - 1` times this turn in
                the same state, with the same normalised output each time: stopped. A change
                in between (by any tool, Bash included), an opaque command that succeeded, or
                a different failure output re-arms it.
Across turns, judged when a turn ends with a measured world:
- no_progress:  `no_progress_turns` turns in a row that made tool calls, left the world as the
                previous turn ended it (files, git state, test outcomes; notes never count)
                and learnt nothing new: each call they made (bookkeeping aside), with its
                normalised result, had already been seen since the world last changed. A turn
                without tool calls neither stalls nor counts as progress.

`reset()` (the operator resumes) forgets everything. In shadow mode every rule is evaluated
and recorded, and nothing is stopped.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime

from runtime.guard.records import CallEvidence, HaltRecord
from runtime.instance.guard_settings import SentinelSettings
from runtime.turn.driver import ToolCallRequest
from sentinel_v1.calls import call_key, canonical_arguments, effect_of, outcome_digest, runs_tests
from sentinel_v1.rules import (
    Change,
    Fired,
    Seen,
    State,
    alternation,
    changed_components,
    failing,
    repeat,
    same_state,
)

__all__ = ["PROCEED", "Sentinel", "SentinelVerdict", "WorldState", "canonical_arguments"]

TURN_HISTORY = 512  # calls of a turn kept for the rules (the oldest are forgotten)
OBSERVED_CAPACITY = 4096  # (call, result) pairs remembered for the no-progress rule
EVIDENCE_CALLS = 50  # calls named in a no-progress record


@dataclass(frozen=True)
class SentinelVerdict:
    """`halt` stops the call (or the panel, at a turn's end); `record` is set whenever a rule
    fired, in shadow mode too."""

    halt: bool = False
    record: HaltRecord | None = None


PROCEED = SentinelVerdict()


@dataclass(frozen=True)
class WorldState:
    """The world as the owner measured it (world.py), before a call or at a turn's end."""

    files_written: tuple[tuple[str, str], ...] = ()  # (path, content hash or "gone")
    slots: tuple[tuple[str, str], ...] = ()  # (label, value hash): notes, never progress
    test_results: tuple[tuple[str, str], ...] = ()  # (test, outcome) the owner knows of
    git_tree: str | None = None  # digest of HEAD, index and changed files; None: no git


@dataclass
class _Turn:
    seen: list[Seen] = field(default_factory=list)
    epoch: int = 0  # changes assumed while the world is not measured
    opaque: frozenset[str] = frozenset()
    files: dict[str, str] = field(default_factory=dict)  # as last measured (shared by states)
    observed: dict[tuple[str, str], None] = field(default_factory=dict)
    measured: State | None = None  # the state at the last measurement
    since: list[str] = field(default_factory=list)  # keys of the calls since that measurement
    changes: list[Change] = field(default_factory=list)  # what changed before which call
    calls: int = 0  # calls judged this turn


def _utc_now() -> datetime:
    return datetime.now(UTC)


class Sentinel:
    """Watches one panel's tool calls. No I/O: the owner writes the records it returns."""

    def __init__(
        self, settings: SentinelSettings, *, clock: Callable[[], datetime] = _utc_now
    ) -> None:
        self.settings = settings
        self._clock = clock
        self._turn = 1
        self._now = _Turn()
        self._tests: dict[str, str] = {}  # replaced, never changed in place: states share it
        self._last_end: State | None = None
        self._observed: dict[tuple[str, str], None] = {}
        self._stalled = 0

    @property
    def turn(self) -> int:
        return self._turn

    def begin_turn(self, turn: int) -> None:
        self._turn = turn
        self._now = _Turn()

    def reset(self) -> None:
        """The operator resumed the panel: forget everything seen so far."""
        self._now = _Turn()
        self._tests = {}
        self._last_end = None
        self._observed = {}
        self._stalled = 0

    # -- calls ----------------------------------------------------------------------------------

    def observe_call(
        self, call: ToolCallRequest, world: WorldState | None = None
    ) -> SentinelVerdict:
        """Judge a call before it runs, with the world as measured just before it (None: not
        measured). A halting verdict means: do not run it, end the turn."""
        arguments = call_key(call.name, call.input)
        key = f"{call.name}\0{arguments}"
        state = self._state(world)
        self._now.calls += 1
        if world is not None:
            self._attribute(state)
            self._now.since = []
        self._now.since.append(key)
        candidate = Seen(
            key=key,
            seq=self._now.calls,
            state=state,
            evidence=CallEvidence(call.tool_use_id, call.name, arguments),
            effect=effect_of(call.name, call.input, self.settings.bookkeeping_tools),
            tests=runs_tests(call.name, call.input),
            measured=world is not None,
        )
        fired = self._judge(candidate)
        if fired is not None and not self.settings.shadow:
            return SentinelVerdict(halt=True, record=self._record(*fired))
        self._now.seen.append(candidate)
        del self._now.seen[:-TURN_HISTORY]
        return SentinelVerdict(record=self._record(*fired)) if fired else PROCEED

    def observe_result(self, tool_use_id: str, *, is_error: bool, content: str = "") -> None:
        """A call's result: its outcome, a test's outcome, an opaque command's success."""
        seen = next((s for s in reversed(self._now.seen) if s.evidence.tool_use_id == tool_use_id),
                    None)  # fmt: skip
        if seen is None:
            return
        seen.failed = is_error
        seen.outcome = outcome_digest(is_error, content)
        seen.evidence = replace(seen.evidence, failed=is_error)
        if seen.effect != "notes":
            self._now.observed[(seen.key, seen.outcome)] = None
        if seen.tests:
            self._tests = {**self._tests, seen.key: seen.outcome}
        if is_error:
            return
        if seen.effect == "change":
            self._now.opaque = self._now.opaque | {seen.key}
        elif (
            not seen.measured
            and seen.effect != "notes"
            and seen.name in self.settings.mutating_tools
        ):
            self._now.epoch += 1

    def _state(self, world: WorldState | None) -> State:
        """The state a call is judged in: the world measured before it, and what was learnt."""
        if world is None:
            return State(tests=self._tests, opaque=self._now.opaque, epoch=self._now.epoch)
        files = dict(world.files_written)
        if files == self._now.files:
            files = self._now.files  # one mapping shared by every state until a file changes
        self._now.files = files
        return State(
            files, world.git_tree, self._tests_with(world), self._now.opaque, self._now.epoch
        )

    def _tests_with(self, world: WorldState) -> dict[str, str]:
        if not world.test_results:
            return self._tests
        return {**dict(world.test_results), **self._tests}

    def _attribute(self, state: State) -> None:
        """What changed since the last measurement was done by the calls made since (calls
        made before a turn's first measurement count as someone else's)."""
        before = self._now.measured
        self._now.measured = state
        if before is None:
            return
        by = frozenset(self._now.since)
        for component in sorted(changed_components(before, state)):
            self._now.changes.append((self._now.calls, component, by))
        del self._now.changes[:-TURN_HISTORY]

    def _judge(self, candidate: Seen) -> Fired | None:
        settings = self.settings
        seen = self._now.seen
        log = self._now.changes
        # Notes are invisible to the other calls' windows; a note's own repeats still count.
        visible = seen if candidate.effect == "notes" else [s for s in seen if s.effect != "notes"]
        return (
            repeat(
                visible,
                candidate,
                window=settings.window,
                threshold=settings.repeat_threshold,
                log=log,
            )
            or alternation(
                visible,
                candidate,
                cycles=settings.alternation_cycles,
                longest=settings.max_cycle_length,
                log=log,
            )
            or failing(seen, candidate, threshold=settings.failure_threshold, log=log)
        )

    # -- turns ----------------------------------------------------------------------------------

    def end_turn(self, world: WorldState | None = None) -> SentinelVerdict:
        """Close the turn; judge progress when the owner measured the world."""
        finished, record_turn = self._now, self._turn
        self._now = _Turn()
        self._turn += 1
        limit = self.settings.no_progress_turns
        if world is None or limit == 0:
            return PROCEED
        end = State(dict(world.files_written), world.git_tree, self._tests_with(world))
        changed = self._last_end is None or not same_state(end, self._last_end)
        self._last_end = end
        if changed:
            self._stalled = 0
            self._observed = dict(finished.observed)
            return PROCEED
        if not finished.seen:
            return PROCEED  # a conversation: neither stalls nor counts as progress
        learnt = any(o not in self._observed for o in finished.observed)
        self._observed.update(finished.observed)
        while len(self._observed) > OBSERVED_CAPACITY:
            del self._observed[next(iter(self._observed))]
        if learnt:
            self._stalled = 0
            return PROCEED
        self._stalled += 1
        if self._stalled < limit:
            return PROCEED
        message = (
            f"{self._stalled} turns in a row made tool calls, changed nothing (files, git tree, "
            "test outcomes; notes do not count) and learnt nothing new (every call, with its "
            "result, had been seen before)"
        )
        calls = tuple(s.evidence for s in finished.seen[-EVIDENCE_CALLS:])
        record = replace(self._record("no_progress", message, calls), turn=record_turn)
        if self.settings.shadow:
            self._stalled = 0
            return SentinelVerdict(record=record)
        return SentinelVerdict(halt=True, record=record)

    def _record(self, rule: str, message: str, calls: tuple[CallEvidence, ...]) -> HaltRecord:
        return HaltRecord(
            source="sentinel",
            rule=rule,
            message=message,
            turn=self._turn,
            at=self._clock(),
            shadow=self.settings.shadow,
            calls=calls,
        )
