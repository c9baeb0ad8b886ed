"""The session's approver: every tool call asks the budget, then the sentinel, then the policy.

`Guard` wraps the permission policy (any `Approver`) and is what the driver consults, from the
PreToolUse hook and `can_use_tool` on the live path alike. A budget that is spent or a sentinel
rule that fires refuses the call before the policy is asked (so an operator is never asked
about a call that would not run anyway) and sets `halt`: the refusal's message is the
`[BUDGET HALT]` / `[SENTINEL HALT]` notice, and the session, seeing `halt`, stops consuming
the driver and ends the turn (runtime/session.py). Once halting, every further call of the
turn is refused with the same notice.

The guard also feeds the trackers what the turn reports (usage, cost, tool results) and
measures the world state that the no-progress rule compares from turn to turn.
"""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable, Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread

from runtime.budget import BudgetTracker
from runtime.driver import Approver, Cost, Decision, DriverEvent, ToolCallRequest, ToolResult, Usage
from runtime.limits_config import BudgetSettings, LimitsConfig
from runtime.sentinel import HaltRecord, Sentinel, WorldState
from runtime.store import AsyncTurnStore
from runtime.tools.manifest import fingerprint

GitProbe = Callable[[Path], Awaitable[str | None]]
GIT_TIMEOUT_S = 5.0


def _utc_now() -> datetime:
    return datetime.now(UTC)


class Guard:
    """Budget -> sentinel -> policy, for one session. `sentinel=False` leaves the sentinel out
    (config `runtime_sentinel`); `on_shadow` receives what shadow mode would have halted."""

    def __init__(
        self,
        policy: Approver,
        limits: LimitsConfig,
        *,
        sentinel: bool,
        on_shadow: Callable[[HaltRecord], None] = lambda record: None,
        clock: Callable[[], datetime] = _utc_now,
    ) -> None:
        self.policy = policy
        self.budget = BudgetTracker(limits.budget, clock=clock)
        self.sentinel = Sentinel(limits.sentinel, clock=clock) if sentinel else None
        self.halt: HaltRecord | None = None
        self._on_shadow = on_shadow
        self._turn_open = False

    @property
    def wants_world(self) -> bool:
        """Whether end_turn needs a measured world (the no-progress rule is on)."""
        return self.sentinel is not None and self.sentinel.settings.no_progress_turns > 0

    def begin_turn(self, turn: int) -> HaltRecord | None:
        """Start a turn; a record means the budget forbids it (the panel halts, nothing runs)."""
        self.halt = None
        verdict = self.budget.begin_turn(turn)
        if verdict.stop:
            return verdict.record
        if self.sentinel is not None:
            self.sentinel.begin_turn(turn)
        self._turn_open = True
        return None

    async def decide(self, call: ToolCallRequest) -> Decision:
        if self.halt is not None:
            return Decision(allow=False, message=self.halt.notice())
        spent = self.budget.check_before_call()
        if spent.stop and spent.record is not None:
            return self._stop(spent.record)
        if self.sentinel is not None:
            verdict = self.sentinel.observe_call(call)
            if verdict.halt and verdict.record is not None:
                return self._stop(verdict.record)
            if verdict.record is not None:
                self._on_shadow(verdict.record)
        return await self.policy.decide(call)

    def _stop(self, record: HaltRecord) -> Decision:
        self.halt = record
        return Decision(allow=False, message=record.notice())

    def observe(self, event: DriverEvent) -> None:
        """What the turn reported: spending for the budget, tool outcomes for the sentinel."""
        if isinstance(event, Usage):
            self.budget.record(usage=event)
        elif isinstance(event, Cost):
            self.budget.record(cost=event)
        elif isinstance(event, ToolResult) and self.sentinel is not None:
            self.sentinel.observe_result(event.tool_use_id, is_error=event.is_error)

    def end_turn(self, world: WorldState | None = None) -> HaltRecord | None:
        """Close the turn (idempotent); returns the record that halts the panel now, if any.

        Judged at the end: the no-progress rule (with `world`), and the session budgets, so a
        panel that has spent its budget stops now rather than at its next input.
        """
        if not self._turn_open:
            return self.halt
        self._turn_open = False
        self.budget.end_turn()
        if self.sentinel is not None:
            verdict = self.sentinel.end_turn(world if self.halt is None else None)
            if verdict.halt and verdict.record is not None and self.halt is None:
                self.halt = verdict.record
            elif verdict.record is not None and not verdict.halt:
                self._on_shadow(verdict.record)
        if self.halt is None:
            spent = self.budget.check_before_call()
            if spent.stop:
                self.halt = spent.record
        return self.halt

    def resume(self, limits: BudgetSettings | None = None) -> None:
        """The operator lets the panel go on: clear the halt, the budget stop, the sentinel."""
        self.halt = None
        self.budget.resume(limits)
        if self.sentinel is not None:
            self.sentinel.reset()

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
            "sentinel": "off" if self.sentinel is None else self._sentinel_mode(),
        }

    def _sentinel_mode(self) -> str:
        assert self.sentinel is not None
        return "shadow" if self.sentinel.settings.shadow else "on"


async def git_state(cwd: Path) -> str | None:
    """A hash of the git state of `cwd`, or None outside git (or when git takes too long).

    HEAD, the status, the diff of tracked files against HEAD, and the size and mtime of each
    untracked file: enough to see any change to the working tree, and read-only (nothing is
    added to the repository's objects or index).
    """

    async def git(*args: str) -> tuple[int, bytes]:
        done = await anyio.run_process(["git", *args], cwd=cwd, check=False)
        return done.returncode, done.stdout

    with anyio.move_on_after(GIT_TIMEOUT_S):
        inside, _ = await git("rev-parse", "--git-dir")
        if inside != 0:
            return None
        digest = hashlib.sha256()
        has_head, head = await git("rev-parse", "--verify", "-q", "HEAD")
        for part in (
            head,
            (await git("status", "--porcelain", "-z"))[1],
            (await git("diff", "HEAD" if has_head == 0 else "--cached"))[1],
            (await git("diff"))[1] if has_head != 0 else b"",
        ):
            digest.update(part + b"\0")
        _, untracked = await git("ls-files", "-o", "--exclude-standard", "-z")
        names = [n.decode("utf-8", "surrogateescape") for n in untracked.split(b"\0") if n]
        digest.update(repr(await anyio.to_thread.run_sync(_stats, cwd, names)).encode())
        return digest.hexdigest()
    return None


def _stats(cwd: Path, names: list[str]) -> list[tuple[str, int, int]]:
    out = []
    for name in names:
        try:
            st = (cwd / name).stat()
        except OSError:
            continue
        out.append((name, st.st_size, st.st_mtime_ns))
    return out


async def measure_world(
    store: AsyncTurnStore, written: Iterable[str], cwd: Path, git_probe: GitProbe
) -> WorldState:
    """What counts as progress: files the agent wrote (by content), slot values, git state."""
    paths = sorted(written)

    def hash_files() -> tuple[tuple[str, str], ...]:
        return tuple((p, fp.digest if (fp := fingerprint(p)) else "gone") for p in paths)

    files = await anyio.to_thread.run_sync(hash_files)
    slots = tuple(
        (s.label, hashlib.sha256(s.content.encode("utf-8")).hexdigest())
        for s in await store.slots()
    )
    return WorldState(files_written=files, slots=slots, git_tree=await git_probe(cwd))
