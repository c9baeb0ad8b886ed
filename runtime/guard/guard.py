"""The one guard of a panel: budget, the owner's checks, the sentinel, the lane, then the policy.

`Guard` is the `Approver` the driver consults for every tool call, from the PreToolUse hook and
`can_use_tool` on the live path alike. It is built once per panel and outlives the panel's
sessions: a host keeps it across restarts, so a crash cannot reset a budget, forget what the
sentinel saw or lift a halt. Its parts, asked in this order:

1. the halt: a halted panel refuses every call (and every turn) until `resume()`;
2. the budget (budget.py): a spent limit halts the panel;
3. the owner's checks (`GuardCheck`): a host adds its team-wide budget, the budget slope and
   the terminal-send rule; a check may refuse one call or halt the panel;
4. the sentinel (sentinel.py), when switched on, with the world as measured just before the
   call (world.py), so a change made by any means (a Bash `sed -i` included) counts;
5. the lane (lane.py), the role doc's front matter as read for this turn (`set_lane`): its
   denial beats every pattern, mode and "always" rule of the policy; it never allows, so a
   role doc can narrow what the policy allows but never widen it;
6. the policy (any `Approver`; a host gives each life the instance's policy).

A halt found anywhere refuses the call before the policy is asked, so an operator is never
asked about a call that would not run. The record is kept in `halted` (until `resume()`), is
passed to every listener in `on_record`, and the session, seeing `halted`, ends the turn.
Records the sentinel makes in shadow mode go to the listeners too, and stop nothing.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any, Protocol

import anyio

from runtime.guard.budget import BudgetTracker, Spend
from runtime.guard.lane import RecipientsOf, lane_read_refusal, lane_verdict
from runtime.guard.records import HaltRecord
from runtime.guard.sentinel import Sentinel, WorldState
from runtime.guard.world import WorldProbe, touched_paths
from runtime.instance.guard_settings import BudgetSettings, LimitsConfig
from runtime.instance.lane import Lane
from runtime.policy.approver import PolicyApprover
from runtime.turn.driver import (
    Approver,
    Cost,
    Decision,
    DriverEvent,
    ToolCallRequest,
    ToolResult,
    Usage,
)

# Paths whose content the guard hashes when it measures the world: the most recent ones.
TOUCHED_CAPACITY = 256


@dataclass(frozen=True)
class GuardSettings:
    """What a guard enforces: the budgets, and the sentinel's switch and thresholds."""

    limits: LimitsConfig = field(default_factory=LimitsConfig)
    sentinel: bool = True


@dataclass(frozen=True)
class Refusal:
    """A check's no: `message` is what the model reads; a `record` also halts the panel."""

    message: str
    record: HaltRecord | None = None


@dataclass(frozen=True)
class TurnTally:
    """One finished turn as the checks see it."""

    turn: int
    spent: Spend
    tool_calls: int
    # Measured when the sentinel runs; else whether a mutating tool (Write, Edit...) succeeded.
    changed_world: bool


class GuardCheck(Protocol):
    """A check its owner adds to a guard: a host's team budget, terminal sends, budget slope."""

    def before_turn(self) -> HaltRecord | None: ...

    def before_call(self, call: ToolCallRequest) -> Refusal | None: ...

    def after_turn(self, tally: TurnTally) -> HaltRecord | None: ...


class NotStarted:
    """The policy of a guard whose panel has no session yet: refuses everything."""

    async def decide(self, call: ToolCallRequest) -> Decision:
        return Decision(allow=False, message="The panel has no session yet; the call was not run.")


def _utc_now() -> datetime:
    return datetime.now(UTC)


class Guard:
    """Budget -> checks -> sentinel -> policy for one panel; see the module docstring."""

    def __init__(
        self,
        policy: Approver,
        settings: GuardSettings | None = None,
        *,
        world: WorldProbe | None = None,
        checks: Sequence[GuardCheck] = (),
        clock: Callable[[], datetime] = _utc_now,
        recipients_of: RecipientsOf | None = None,
    ) -> None:
        self.policy = policy
        # Who a call sends to (None: not a send), for the lane's `recipients`; the owner's,
        # since only it knows its send tools' names and inputs.
        self.recipients_of = recipients_of
        self.lane: Lane | None = None
        self._lane_cwd: Path | None = None
        self.world = world
        self.checks = tuple(checks)
        settings = settings or GuardSettings()
        self.settings = settings
        self.budget = BudgetTracker(settings.limits.budget, clock=clock)
        self.sentinel: Sentinel | None = None
        self.halted: HaltRecord | None = None
        self.on_record: list[Callable[[HaltRecord], None]] = []
        self._clock = clock
        self._turn = 0
        self._turn_open = False
        self._turn_calls = 0
        self._turn_mutations = 0
        self._call_names: dict[str, str] = {}  # tool_use_id -> tool, for this turn's results
        self._first_world: WorldState | None = None
        self._first_files: dict[str, str] = {}  # each file's hash when first measured this turn
        self._touched: OrderedDict[str, None] = OrderedDict()
        self._read_checks = 0
        self.reconfigure(settings)

    # -- settings -------------------------------------------------------------------------------

    def reconfigure(self, settings: GuardSettings) -> None:
        """New limits or thresholds (a new life read the instance's config again). What was
        spent and what the sentinel saw are kept; switching the sentinel off forgets it."""
        self.settings = settings
        self.budget.limits = settings.limits.budget
        if not settings.sentinel:
            self.sentinel = None
        elif self.sentinel is None:
            self.sentinel = Sentinel(settings.limits.sentinel, clock=self._clock)
            self.sentinel.begin_turn(max(self._turn, 1))
        else:
            self.sentinel.settings = settings.limits.sentinel

    @property
    def sentinel_mode(self) -> str:
        if self.sentinel is None:
            return "off"
        return "shadow" if self.sentinel.settings.shadow else "on"

    def set_lane(self, lane: Lane | None, cwd: Path) -> None:
        """The lane for the calls from now on (the session sets it from each turn's read of
        the role doc); `cwd` is the working directory its globs are relative to."""
        self.lane, self._lane_cwd = lane, cwd

    # -- turns ----------------------------------------------------------------------------------

    def may_begin(self) -> HaltRecord | None:
        """Whether a turn may start now, without starting one; a record is the halt that
        forbids it (a limit reached just now halts the panel)."""
        if self.halted is not None:
            return self.halted
        verdict = self.budget.may_begin()
        record = (
            verdict.record if verdict.stop else self._first(c.before_turn() for c in self.checks)
        )
        return None if record is None else self._halt(record)

    def begin_turn(self, turn: int) -> HaltRecord | None:
        """Start a turn; a record means the panel may not run one (nothing runs)."""
        record = self.may_begin()
        if record is not None:
            return record
        self.budget.begin_turn(turn)
        self._turn, self._turn_open, self._turn_calls = turn, True, 0
        self._turn_mutations, self._call_names = 0, {}
        self._first_world, self._first_files = None, {}
        if self.sentinel is not None:
            self.sentinel.begin_turn(turn)
        return None

    async def decide(self, call: ToolCallRequest) -> Decision:
        if self.halted is not None:
            return Decision(allow=False, message=self.halted.notice())
        spent = self.budget.check_before_call()
        if spent.stop and spent.record is not None:
            return self._refuse(self._halt(spent.record))
        for check in self.checks:
            refusal = check.before_call(call)
            if refusal is not None:
                if refusal.record is not None:
                    self._halt(refusal.record)
                return Decision(allow=False, message=refusal.message)
        self._turn_calls += 1
        self._call_names[call.tool_use_id] = call.name
        if self.sentinel is not None:
            world = await self._measure(touched_paths(call, self._cwd()))
            verdict = self.sentinel.observe_call(call, world, root=self._cwd())
            if verdict.record is not None:
                if verdict.halt:
                    return self._refuse(self._halt(verdict.record))
                self._tell(verdict.record)
        lane = self.lane
        if lane is not None:
            judged = await self._judge_lane(lane, call)
            if judged is not None:
                return judged
        return await self.policy.decide(call)

    def guard_role_doc(self, path: Path) -> None:
        """The panel reads its role doc from `path` from now on: its policy guards it from
        the tools as it guards the one the panel was opened with (a policy that is not the
        instance's has no such rule to widen)."""
        if isinstance(self.policy, PolicyApprover):
            self.policy.guard_role_doc(path)

    async def check_read(self, path: str, cwd: Path) -> str | None:
        """None when the host itself may read `path` for one of the panel's own tools (they
        run in the host, outside any sandbox); else the refusal the model reads. The tool's
        call has already passed `decide`: here a halted panel reads nothing, the lane's
        `readable` comes first, then the policy's strict rules, as for an unconfined Read."""
        if self.halted is not None:
            return self.halted.notice()
        lane = self.lane
        if lane is not None:
            where = self._lane_cwd or cwd
            refusal = await anyio.to_thread.run_sync(lane_read_refusal, lane, path, where)
            if refusal is not None:
                return f"Lane: {refusal}"
        self._read_checks += 1
        call = ToolCallRequest(
            f"mnemara-read-check-{self._read_checks}", "Read", {"file_path": path}
        )
        policy = self.policy
        if isinstance(policy, PolicyApprover):
            decision = await policy.decide(call, outside_sandbox=True)
        else:
            decision = await policy.decide(call)
        return None if decision.allow else decision.message or "refused by the permission policy"

    def observe(self, event: DriverEvent) -> None:
        """What the turn reported: spending for the budget, tool outcomes for the sentinel."""
        if isinstance(event, Usage):
            self.budget.record(usage=event)
        elif isinstance(event, Cost):
            self.budget.record(cost=event)
        elif isinstance(event, ToolResult):
            name = self._call_names.get(event.tool_use_id, "")
            if not event.is_error and name in self.settings.limits.sentinel.mutating_tools:
                self._turn_mutations += 1
            if self.sentinel is not None:
                self.sentinel.observe_result(
                    event.tool_use_id, is_error=event.is_error, content=event.content
                )

    async def finish_turn(self) -> HaltRecord | None:
        """Judge the turn that ends (no-progress, the checks, the session budgets); returns the
        record that halts the panel now, if any. Idempotent with `close_turn`."""
        if not self._turn_open:
            return self.halted
        world: WorldState | None = None
        # A turn that measured nothing made no call: a conversation, which the sentinel neither
        # counts as progress nor as a stall, so its end state would only be compared with
        # itself. Skipping it saves a git probe per such turn; an outside change in the
        # meantime is seen at the next turn that makes a call.
        if self.sentinel is not None and self.halted is None and self._first_world is not None:
            world = await self._measure(())
        changed = self._changed_world(world)
        tally = TurnTally(self._turn, self.budget.snapshot().turn, self._turn_calls, changed)
        self.close_turn(world)
        if self.halted is None:
            record = self._first(c.after_turn(tally) for c in self.checks)
            if record is not None:
                self._halt(record)
        if self.halted is None:
            spent = self.budget.check_before_call()
            if spent.stop and spent.record is not None:
                self._halt(spent.record)
        return self.halted

    def close_turn(self, world: WorldState | None = None) -> None:
        """Close the turn's budget and sentinel state (idempotent; a stopped turn is closed
        without being judged)."""
        if not self._turn_open:
            return
        self._turn_open = False
        self.budget.end_turn()
        if self.sentinel is not None:
            verdict = self.sentinel.end_turn(
                world if self.halted is None else None, root=self._cwd()
            )
            if verdict.record is not None:
                if verdict.halt and self.halted is None:
                    self._halt(verdict.record)
                elif not verdict.halt:
                    self._tell(verdict.record)

    async def _judge_lane(self, lane: Lane, call: ToolCallRequest) -> Decision | None:
        """The lane's refusal, or None to leave the call to the policy (a lane only narrows
        what the policy allows). Off the event loop: it resolves paths on disk, as the policy
        does."""
        cwd = self._lane_cwd or Path(self._cwd() or Path.cwd())
        judge = partial(
            lane_verdict,
            lane,
            call,
            cwd,
            turn_calls=self._turn_calls,
            recipients_of=self.recipients_of,
        )
        verdict = await anyio.to_thread.run_sync(judge)
        if verdict is None:
            return None
        return Decision(allow=False, message=f"Lane: {verdict.message}")

    # -- halts ----------------------------------------------------------------------------------

    def halt_now(self, record: HaltRecord) -> None:
        """Halt the panel from outside (an operator, a watchdog); the first halt is kept."""
        if self.halted is None:
            self._halt(record)

    def resume(self, limits: BudgetSettings | None = None) -> HaltRecord | None:
        """The operator lets the panel go on: the halt, the budget stop and what the sentinel
        saw are cleared (spending so far stays). Returns the halt that was lifted."""
        record, self.halted = self.halted, None
        self.budget.resume(limits)
        if self.sentinel is not None:
            self.sentinel.reset()
        return record

    def _halt(self, record: HaltRecord) -> HaltRecord:
        if self.halted is None:
            self.halted = record
            self._tell(record)
        return self.halted

    def _refuse(self, record: HaltRecord) -> Decision:
        return Decision(allow=False, message=record.notice())

    def _tell(self, record: HaltRecord) -> None:
        for listener in self.on_record:
            listener(record)

    @staticmethod
    def _first(records: Any) -> HaltRecord | None:
        return next((r for r in records if r is not None), None)

    # -- the world --------------------------------------------------------------------------------

    def _cwd(self) -> str | None:
        return None if self.world is None else str(self.world.root)

    async def _measure(self, touched: Sequence[str]) -> WorldState | None:
        if self.world is None:
            return None
        for path in touched:
            self._touched.pop(path, None)
            self._touched[path] = None
        while len(self._touched) > TOUCHED_CAPACITY:
            self._touched.popitem(last=False)
        world = await self.world.measure(tuple(self._touched))
        if self._first_world is None:
            self._first_world = world
        for path, digest in world.files_written:
            self._first_files.setdefault(path, digest)
        return world

    def _changed_world(self, final: WorldState | None) -> bool:
        """Did the turn change the world: its final state against the state before its first
        call, each file against its hash when the turn first measured it. Unmeasured (the
        sentinel is off): did a mutating tool succeed."""
        if self.sentinel is None or self.world is None:
            return self._turn_mutations > 0
        first = self._first_world
        if first is None or final is None:
            return False  # no call was measured: nothing ran that could change it
        files = dict(final.files_written)
        if any(files.get(path, digest) != digest for path, digest in self._first_files.items()):
            return True
        return replace(final, files_written=()) != replace(first, files_written=())

    # -- reporting ------------------------------------------------------------------------------

    def spend(self) -> dict[str, Any]:
        """The session's spend so far and its limits, as `inspect_context` and `show` print it."""
        snap = self.budget.snapshot()
        s = snap.session
        limits = {k: v for k, v in snap.limits.model_dump().items() if v is not None}
        return {
            "turns": s.turns,
            "requests": s.requests,
            "input_tokens": s.input_tokens,
            "output_tokens": s.output_tokens,
            "usd": round(s.usd, 6),
            "limits": limits,
            "sentinel": self.sentinel_mode,
        }
