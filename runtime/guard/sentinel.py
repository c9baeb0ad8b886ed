"""The runtime sentinel: stops a tool-call loop before the looping call runs.

Deterministic rules over what calls do, what they returned and what they changed, never over
wording or spelling. A call is judged before it runs, by what it does and the state it would
run in; the rules that need its result (the same error, the same content) stop the next call.

What a call does (identity.py, data in equivalents.toml): its tool and canonical arguments
with the spellings of one action folded into one key: paths relative to the panel's root,
program and subcommand aliases (`python3`/`python`, `python -m pytest`/`pytest`, `uv run`,
`npm run test`/`npm test`), long and short options, single-letter options run together,
`cat F` and a whole-file Read of F; waits and timestamps are placeholders and each run of
options is sorted (calls.py).

What it returned (calls.py): an outcome (pass/fail and the result with times, durations,
ids, counters and temporary paths masked), an observation (the masked content alone, when
it says something) and, for a failure, an error signature (the lines that name the error,
numbers masked): one error reached through different commands or tools has one signature.

State (rules.State): the world as the owner measured it just before the call (world.py: the
content hash of every file a call named, Bash commands included, and the git state), plus
what the sentinel learnt from results: the outcome of every test command and the opaque
commands that succeeded this turn. Two states are the same when they agree on everything both
measured (a file or a test seen for the first time is no change), leaving out what only the
judged call's own earlier runs changed (a file it appends to, the git state it alone moved,
its own opaque command): a call's own effects never excuse running it again. A change
measured across calls that only read was made from outside (a background job writing its
output, another process): it is progress for every call, never excused.
- Bookkeeping is not progress: the bookkeeping tools (`settings.bookkeeping_tools`: memory,
  slots, todo list, window care) change nothing for the rules and are invisible to the other
  calls' repeat and alternation windows; the files the panel keeps for itself
  (`settings.bookkeeping_files`: logs, notes, progress and todo files, by glob relative to
  the working directory) are left out of the state, and so are timestamps (the probe hashes
  them masked).
- Opaque commands: a call whose effects cannot be measured (a Bash command that is neither a
  known read nor a test: pip/npm install, a script, `git push`, the network with a body; an
  external tool) counts as a change once per distinct key per turn when it succeeds, for
  every call but itself.
- Unmeasured world (the owner passed None): a successful call to a tool in
  `settings.mutating_tools` (bookkeeping tools excepted) counts as a change.

Patience: a round of a repeat or a cycle that waited at least `patient_round_s` seconds (30)
in calls that wait (`sleep`, a blocking task read, a wait-like input; the time they really
took) is a patient poll: it may bring the same outcome back until the rounds have waited
`wait_budget_s` (1800 s) in all. A remote machine booting, a build in CI and a background
job are waited for; a tight poll is not.

Rules within a turn (the history resets when the turn ends):
- repeat:       the candidate's action was seen `repeat_threshold - 1` times within the last
                `window - 1` calls (8), each in the same state and with the same outcome
                since the last change of outcome: the third call of a tight poll is stopped
                (3), a patient one once its wait budget is spent. A poll whose status
                changes is not a repeat.
- repeat (by content): a read returned content that `repeat_threshold - 1` other reads of
                the last `window` calls returned too, in the same state, through calls that
                are not all one action: the same observation however it is asked for; the
                next call is stopped.
- alternation:  the last `alternation_cycles * L` calls (2), the candidate included, repeat
                one cycle of L calls (2 <= L <= `max_cycle_length`, 6), each call in the same
                state and with the same outcome as its copy one cycle earlier: A/B/A/B, an
                edit and its undo, a status check and a sleep; with patience.
- failing:      the candidate's action already failed `failure_threshold - 1` times (3) in
                the same state with the same error signature: stopped before it runs. And
                across actions: a failure whose signature `failure_threshold - 1` earlier
                failures of the turn had, in the same state, stops the next call, whatever
                command or tool produced it. A change in between re-arms both; retries that
                back off (30 s a round) have patience.
Across turns, judged when a turn ends with a measured world:
- no_progress:  `no_progress_turns` turns in a row (5) that made tool calls, ended in a state
                already seen at the end of one of the last `END_STATES` turns (files, git
                state, test outcomes; bookkeeping never counts), so a world that goes back
                and forth is no progress, and learnt nothing new: every content they
                observed (whichever call observed it) had been observed before. A turn
                without tool calls neither stalls nor counts as progress.

`reset()` (the operator resumes) forgets everything. In shadow mode every rule is evaluated
and recorded, and nothing is stopped.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime

from runtime.guard.bookkeeping import is_bookkeeping
from runtime.guard.calls import (
    as_read,
    call_key,
    canonical_arguments,
    effect_of,
    error_signature,
    hashed,
    observation,
    outcome_digest,
    runs_tests,
    wait_seconds,
)
from runtime.guard.identity import call_identity, canonical_path
from runtime.guard.records import CallEvidence, HaltRecord
from runtime.guard.rules import (
    Change,
    Fired,
    Patience,
    Seen,
    State,
    alternation,
    changed_components,
    failing,
    repeat,
    same_error,
    same_observation,
    same_state,
)
from runtime.instance.guard_settings import SentinelSettings
from runtime.turn.driver import ToolCallRequest

__all__ = ["PROCEED", "Sentinel", "SentinelVerdict", "WorldState", "canonical_arguments"]

TURN_HISTORY = 512  # calls of a turn kept for the rules (the oldest are forgotten)
OBSERVED_CAPACITY = 4096  # observations remembered for the no-progress rule
END_STATES = 64  # turn-end states remembered: a return to one of them is no progress
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
    observed: dict[str, None] = field(default_factory=dict)  # observations of the turn
    measured: State | None = None  # the state at the last measurement
    # The calls since that measurement that may change something (a change across reads
    # only was made from outside).
    since: list[str] = field(default_factory=list)
    changes: list[Change] = field(default_factory=list)  # what changed before which call
    calls: int = 0  # calls judged this turn
    pending: tuple[Fired, State] | None = None  # found in a result: stops the next call


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
        self._ends: list[State] = []  # the states the last turns ended in, newest last
        self._observed: dict[str, None] = {}
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
        self._ends = []
        self._observed = {}
        self._stalled = 0

    @property
    def _patience(self) -> Patience:
        return Patience(self.settings.patient_round_s, self.settings.wait_budget_s)

    # -- calls ----------------------------------------------------------------------------------

    def observe_call(
        self, call: ToolCallRequest, world: WorldState | None = None, *, root: str | None = None
    ) -> SentinelVerdict:
        """Judge a call before it runs, with the world as measured just before it (None: not
        measured) and the panel's working directory (`root`, for paths). A halting verdict
        means: do not run it, end the turn."""
        effect = effect_of(call.name, call.input, self.settings.bookkeeping_tools)
        key = call_identity(call.name, call.input, root)
        state = self._state(world, root)
        self._now.calls += 1
        if world is not None:
            self._attribute(state)
            self._now.since = []
        if effect not in ("read", "notes"):
            self._now.since.append(key)
        candidate = Seen(
            key=key,
            seq=self._now.calls,
            state=state,
            evidence=CallEvidence(call.tool_use_id, call.name, call_key(call.name, call.input)),
            effect=effect,
            tests=runs_tests(call.name, call.input),
            measured=world is not None,
            waits=wait_seconds(call.name, call.input) is not None,
            started=self._clock(),
        )
        fired = self._pending(candidate) or self._judge(candidate)
        if fired is not None and not self.settings.shadow:
            return SentinelVerdict(halt=True, record=self._record(*fired))
        self._now.seen.append(candidate)
        del self._now.seen[:-TURN_HISTORY]
        return SentinelVerdict(record=self._record(*fired)) if fired else PROCEED

    def observe_result(self, tool_use_id: str, *, is_error: bool, content: str = "") -> None:
        """A call's result: its outcome, a test's outcome, an opaque command's success, and
        the rules that judge results (their halt stops the next call)."""
        seen = next((s for s in reversed(self._now.seen) if s.evidence.tool_use_id == tool_use_id),
                    None)  # fmt: skip
        if seen is None:
            return
        seen.failed = is_error
        content = as_read(seen.name, content)
        seen.outcome = outcome_digest(is_error, content)
        if not is_error:
            seen.observed, seen.observed_chars = observation(content)
        else:
            # A file tool's errors do not name what they were about ("String to replace not
            # found"): its signature is its own, so two different edits never share one.
            signature = error_signature(content)
            if seen.effect == "files":
                signature = frozenset(hashed(seen.key, line) for line in signature)
            seen.signature = signature
        if seen.started is not None:
            seen.seconds = max(0.0, (self._clock() - seen.started).total_seconds())
        seen.evidence = replace(seen.evidence, failed=is_error)
        if seen.effect != "notes":
            for learnt in (seen.observed, *sorted(seen.signature)):
                if learnt is not None:
                    self._now.observed[learnt] = None
        if seen.tests:
            self._tests = {**self._tests, seen.key: seen.outcome}
        self._judge_result(seen)
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

    def _state(self, world: WorldState | None, root: str | None) -> State:
        """The state a call is judged in: the world measured before it, and what was learnt."""
        if world is None:
            return State(tests=self._tests, opaque=self._now.opaque, epoch=self._now.epoch)
        files = {p: d for p, d in world.files_written if not self._bookkeeping(p, root)}
        if files == self._now.files:
            files = self._now.files  # one mapping shared by every state until a file changes
        self._now.files = files
        return State(
            files, world.git_tree, self._tests_with(world), self._now.opaque, self._now.epoch
        )

    def _bookkeeping(self, path: str, root: str | None) -> bool:
        return is_bookkeeping(canonical_path(path, root), self.settings.bookkeeping_files)

    def _tests_with(self, world: WorldState) -> dict[str, str]:
        if not world.test_results:
            return self._tests
        return {**dict(world.test_results), **self._tests}

    def _attribute(self, state: State) -> None:
        """What changed since the last measurement was done by the calls made since that may
        change something; across reads only, by someone else (calls made before a turn's
        first measurement count as someone else's too)."""
        before = self._now.measured
        self._now.measured = state
        if before is None:
            return
        by = frozenset(self._now.since)
        for component in sorted(changed_components(before, state)):
            self._now.changes.append((self._now.calls, component, by))
        del self._now.changes[:-TURN_HISTORY]

    def _visible(self, effect: str) -> list[Seen]:
        # Notes are invisible to the other calls' windows; a note's own repeats still count.
        seen = self._now.seen
        return seen if effect == "notes" else [s for s in seen if s.effect != "notes"]

    def _judge(self, candidate: Seen) -> Fired | None:
        settings = self.settings
        log = self._now.changes
        visible = self._visible(candidate.effect)
        return (
            repeat(
                visible,
                candidate,
                window=settings.window,
                threshold=settings.repeat_threshold,
                log=log,
                patience=self._patience,
            )
            or alternation(
                visible,
                candidate,
                cycles=settings.alternation_cycles,
                longest=settings.max_cycle_length,
                log=log,
                patience=self._patience,
            )
            or failing(
                self._now.seen,
                candidate,
                threshold=settings.failure_threshold,
                log=log,
                patience=self._patience,
            )
        )

    def _judge_result(self, latest: Seen) -> None:
        settings = self.settings
        log = self._now.changes
        fired = same_error(
            self._now.seen,
            latest,
            threshold=settings.failure_threshold,
            log=log,
            patience=self._patience,
        ) or same_observation(
            self._visible(latest.effect),
            latest,
            window=settings.window,
            threshold=settings.repeat_threshold,
            log=log,
            patience=self._patience,
        )
        if fired is not None and self._now.pending is None:
            self._now.pending = (fired, latest.state)

    def _pending(self, candidate: Seen) -> Fired | None:
        """A halt found in a result stops the next call, unless the world changed since."""
        pending, self._now.pending = self._now.pending, None
        if pending is None:
            return None
        fired, state = pending
        return fired if same_state(state, candidate.state) else None

    # -- turns ----------------------------------------------------------------------------------

    def end_turn(
        self, world: WorldState | None = None, *, root: str | None = None
    ) -> SentinelVerdict:
        """Close the turn; judge progress when the owner measured the world."""
        finished, record_turn = self._now, self._turn
        self._now = _Turn()
        self._turn += 1
        limit = self.settings.no_progress_turns
        if world is None or limit == 0:
            return PROCEED
        files = {p: d for p, d in world.files_written if not self._bookkeeping(p, root)}
        end = State(files, world.git_tree, self._tests_with(world))
        changed = not any(same_state(end, earlier) for earlier in self._ends)
        self._ends.append(end)
        del self._ends[:-END_STATES]
        if changed:
            self._stalled = 0
            self._remember(finished.observed)
            return PROCEED
        if not finished.seen:
            return PROCEED  # a conversation: neither stalls nor counts as progress
        learnt = any(o not in self._observed for o in finished.observed)
        self._remember(finished.observed)
        if learnt:
            self._stalled = 0
            return PROCEED
        self._stalled += 1
        if self._stalled < limit:
            return PROCEED
        message = (
            f"{self._stalled} turns in a row made tool calls, ended in a state already seen "
            "(files, git tree, test outcomes; bookkeeping does not count) and learnt nothing "
            "new (everything they read had been read before)"
        )
        calls = tuple(s.evidence for s in finished.seen[-EVIDENCE_CALLS:])
        record = replace(self._record("no_progress", message, calls), turn=record_turn)
        if self.settings.shadow:
            self._stalled = 0
            return SentinelVerdict(record=record)
        return SentinelVerdict(halt=True, record=record)

    def _remember(self, observed: dict[str, None]) -> None:
        self._observed.update(observed)
        while len(self._observed) > OBSERVED_CAPACITY:
            del self._observed[next(iter(self._observed))]

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
