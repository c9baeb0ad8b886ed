"""The runtime sentinel: stops a tool-call loop before the looping call runs.

Deterministic rules over what the calls are and what they changed, never over wording:

- repeat:       the same call (tool + canonical arguments) `repeat_threshold` times within
                the last `window` calls, with no change to the world in between;
- alternation:  A/B/A/B (`alternation_cycles` cycles) with no change in between;
- failing:      a call that has already failed `failure_threshold - 1` times, with no change
                in between, is stopped before its next attempt;
- no_progress:  `no_progress_turns` turns in a row that made tool calls but left the world
                state (files written, slots, test results, git tree) exactly as it was.

A successful call to a mutating tool (Write, Edit, our memory and slot tools) changes the
world, so a `git status` after each edit is never a loop; the owner may say explicitly that a
call changed the world (or did not) when it knows better, such as from the git tree hash.
Call history resets when a turn ends; `reset()` (the operator resumes) clears everything. In
shadow mode every rule is evaluated and recorded, and nothing is stopped.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

from runtime.driver import ToolCallRequest
from runtime.guard.records import CallEvidence, HaltRecord
from runtime.guard.settings import SentinelSettings


@dataclass(frozen=True)
class SentinelVerdict:
    """`halt` stops the call (or the panel, at a turn's end); `record` is set whenever a rule
    fired, in shadow mode too."""

    halt: bool = False
    record: HaltRecord | None = None


PROCEED = SentinelVerdict()


@dataclass(frozen=True)
class WorldState:
    """What counts as progress, as the owner measured it at the end of a turn."""

    files_written: tuple[tuple[str, str], ...] = ()  # (path, content hash)
    slots: tuple[tuple[str, str], ...] = ()  # (label, value hash)
    test_results: tuple[str, ...] = ()
    git_tree: str | None = None


def canonical_arguments(value: Any) -> str:
    """Sorted keys, whitespace runs folded to one space, compact JSON."""
    return json.dumps(_normalise(value), sort_keys=True, separators=(",", ":"), default=str)


def _normalise(value: Any) -> Any:
    if isinstance(value, str):
        return " ".join(value.split())
    if isinstance(value, Mapping):
        return {str(k): _normalise(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_normalise(v) for v in value]
    return value


@dataclass
class _Seen:
    key: tuple[str, str]
    epoch: int
    evidence: CallEvidence
    failed: bool | None = None


@dataclass
class _TurnState:
    seen: list[_Seen] = field(default_factory=list)
    epoch: int = 0  # bumped each time the world changes within the turn


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
        self._now = _TurnState()
        self._last_world: WorldState | None = None
        self._stalled = 0

    @property
    def turn(self) -> int:
        return self._turn

    def begin_turn(self, turn: int) -> None:
        self._turn = turn
        self._now = _TurnState()

    def reset(self) -> None:
        """The operator resumed the panel: forget everything seen so far."""
        self._now = _TurnState()
        self._last_world = None
        self._stalled = 0

    def observe_call(self, call: ToolCallRequest, *, row_id: int | None = None) -> SentinelVerdict:
        """Judge a call before it runs. A halting verdict means: do not run it, end the turn."""
        arguments = canonical_arguments(call.input)
        evidence = CallEvidence(call.tool_use_id, call.name, arguments, row_id)
        candidate = _Seen((call.name, arguments), self._now.epoch, evidence)
        fired = self._repeat(candidate) or self._alternation(candidate) or self._failing(candidate)
        if fired is not None and not self.settings.shadow:
            return SentinelVerdict(halt=True, record=self._record(*fired))
        self._now.seen.append(candidate)
        return SentinelVerdict(record=self._record(*fired)) if fired else PROCEED

    def observe_result(
        self, tool_use_id: str, *, is_error: bool, world_changed: bool | None = None
    ) -> None:
        for seen in self._now.seen:
            if seen.evidence.tool_use_id == tool_use_id:
                seen.failed = is_error
                seen.evidence = replace(seen.evidence, failed=is_error)
                if world_changed is None:
                    world_changed = not is_error and seen.key[0] in self.settings.mutating_tools
                break
        if world_changed:
            self._now.epoch += 1

    def end_turn(self, world: WorldState | None = None) -> SentinelVerdict:
        """Close the turn; judge progress when the owner measured the world."""
        made_calls = bool(self._now.seen)
        calls = tuple(s.evidence for s in self._now.seen)
        record_turn = self._turn
        self._now = _TurnState()
        self._turn += 1
        limit = self.settings.no_progress_turns
        if world is None or limit == 0:
            return PROCEED
        unchanged = self._last_world is not None and world == self._last_world
        self._last_world = world
        if not made_calls:
            # A turn without tool calls (a conversation) neither stalls nor counts as progress.
            self._stalled = 0 if not unchanged else self._stalled
            return PROCEED
        self._stalled = self._stalled + 1 if unchanged else 0
        if self._stalled < limit:
            return PROCEED
        message = (
            f"{self._stalled} turns in a row made tool calls and changed nothing "
            "(files, slots, test results, git tree)"
        )
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

    def _same_epoch(self) -> list[_Seen]:
        return [s for s in self._now.seen if s.epoch == self._now.epoch]

    def _repeat(self, candidate: _Seen) -> tuple[str, str, tuple[CallEvidence, ...]] | None:
        recent = self._now.seen[-(self.settings.window - 1) :]
        same = [s for s in recent if s.key == candidate.key and s.epoch == candidate.epoch]
        if len(same) + 1 < self.settings.repeat_threshold:
            return None
        message = (
            f"{candidate.key[0]} called {len(same) + 1} times with the same arguments in the "
            f"last {self.settings.window} calls, with nothing changed in between; "
            "the last call was stopped before it ran"
        )
        return "repeat", message, (*(s.evidence for s in same), candidate.evidence)

    def _alternation(self, candidate: _Seen) -> tuple[str, str, tuple[CallEvidence, ...]] | None:
        length = 2 * self.settings.alternation_cycles
        if length == 0:
            return None
        run = [*self._same_epoch()[-(length - 1) :], candidate]
        if len(run) < length or run[0].key == run[1].key:
            return None
        if any(s.key != run[i % 2].key for i, s in enumerate(run)):
            return None
        names = f"{run[0].key[0]} / {run[1].key[0]}"
        message = (
            f"two calls ({names}) alternated {self.settings.alternation_cycles} times with "
            "nothing changed in between; the last call was stopped before it ran"
        )
        return "alternation", message, tuple(s.evidence for s in run)

    def _failing(self, candidate: _Seen) -> tuple[str, str, tuple[CallEvidence, ...]] | None:
        threshold = self.settings.failure_threshold
        if threshold == 0:
            return None
        failed = [s for s in self._same_epoch() if s.key == candidate.key and s.failed]
        if len(failed) + 1 < threshold:
            return None
        message = (
            f"{candidate.key[0]} already failed {len(failed)} times with the same arguments "
            "and nothing changed since; the next attempt was stopped before it ran"
        )
        return "failing", message, (*(s.evidence for s in failed), candidate.evidence)
