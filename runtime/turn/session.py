"""One panel's session: the turn engine over its state (runtime/turn/state.py), run against a
driver, keeping the instance's store true.

A turn: the role doc is read from disk; the input row is stored as in flight; the prompt is
assembled from the stored window; the driver streams events; then, in one transaction, the
assistant row is appended, the input row marked complete, the message ids it consumed recorded
(under the caller's `source`) and the sends it queued (`queue_send`) put in the outbox; then
the post-turn care the config asks for (runtime/tools/aftercare.py) and the trim. The store
is a thread away, so a turn makes two trips of its own there: the input row with the prompt's
read, and the commit with the trim (when no care comes between); the tools the model calls
may make more. A crash or stop at any point leaves the input row kept and marked. The caller
owns cancellation: cancel the scope around `async for ... in session.turn(...)`.

Delivery: a turn that commits (finished, halted, or stopped half way) has consumed its
messages and sends what it queued; a turn that failed (a driver error) or died with the
process has done neither, so its messages come again and a re-run cannot send twice. The
owner acks what `store.committed(source, ids)` returns and publishes `store.outbox_pending()`.

Every tool call is decided by the session's `Guard` (runtime/guard/guard.py): budget, then
its owner's checks, then the runtime sentinel, then the permission policy. A halt ends the
turn at once with its notice committed; the panel then refuses turns (PanelHaltedError)
until `resume()`. The agent's own tools (runtime/tools/) are registered with every turn as
the `mnemara` MCP server.

The role doc's front matter is its lane (runtime/instance/lane.py), split off at each turn's read:
the system prompt is the body alone, and the lane goes to the guard for that turn's calls.
A front matter that cannot be parsed halts the panel (a `lane` halt record naming the file,
line and field) before anything is stored or sent to the model; it never runs on no lane or
on an older one. A role doc that cannot be read at all keeps today's rule (the last good
text), and with it the lane of that text.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Mapping, Sequence
from contextlib import aclosing
from datetime import UTC, datetime
from functools import partial

import anyio

from runtime.errors import (
    LaneError,
)
from runtime.guard import halts
from runtime.guard.halts import Halted
from runtime.guard.records import HaltRecord
from runtime.instance.debuglog import DebugLog
from runtime.instance.lane import split_front_matter
from runtime.instance.roledoc import RoleDocRead
from runtime.store import TurnStore
from runtime.store.async_store import PromptParts
from runtime.tools.aftercare import (
    after_turn,
    care_due,
    commit_then_trim,
    evict_bulk,
    note_trim,
    trim_window,
    window_caps,
)
from runtime.turn.cache_ttl import CacheTtl
from runtime.turn.driver import (
    Cost,
    Done,
    DriverEvent,
    ErrorEvent,
    TurnRequest,
    Usage,
)
from runtime.turn.events import (
    STOPPED_NOTE,
    RoleWarning,
    SessionEvent,
    Trimmed,
    TurnCommitted,
    error_for,
)
from runtime.turn.prompt import build_prompt
from runtime.turn.recorder import TurnRecorder
from runtime.turn.request import spare_request, turn_request
from runtime.turn.state import SessionState
from runtime.window.plan import TrimPlan
from runtime.window.rows import Consumed, NewRow, OutboxDraft, estimate_tokens

# How long a finished turn's driver may take to end after the commit (the CLI's exit; the SDK
# bounds its own waits, this is a backstop).
FINISH_TIMEOUT_S = 30.0


class Session(SessionState):
    """One panel's session: `turn` runs one turn (the module's docstring says how)."""

    def spare_request(self) -> TurnRequest | None:
        """The next turn's request without its prompt, for a warm spare (request.py)."""
        return spare_request(self)

    async def _halt(self, record: HaltRecord, user_id: int | None, ids: Sequence[int]) -> Halted:
        # An operator's resume while the halting turn committed has lifted it already: it is
        # logged, but not stored as the panel's current halt (`mnemara show` would say halted).
        current = self.guard.halted is record
        if ids:  # the calls in the evidence are in this turn's assistant row
            record = record.with_row_ids({c.tool_use_id: ids[0] for c in record.calls})
        self.unlogged_halt = None
        halts.log_halt(self.debug, record, user_row_id=user_id)
        if current:
            await halts.save_halt(self.store, record, user_row_id=user_id)
        return Halted(record)

    # -- the turn -----------------------------------------------------------------------------

    async def turn(
        self,
        text: str,
        *,
        consumed_ids: Sequence[int] = (),
        source: str = "",
        inbox: str | None = None,
        notes: Mapping[str, str] | None = None,
        label: str = "",
    ) -> AsyncGenerator[SessionEvent, None]:
        """Run one turn on `text`; `consumed_ids` are the ids (unique within `source`, an
        opaque name the owner gives) of the messages it answers, recorded when it commits,
        and `notes` (store meta values; `note_commit` adds more) are stored with them.
        `label` marks the input row; an input that consumes no message is known by it, so a
        later try replaces an interrupted one (TurnStore.begin_turn).

        Only a stop (cancellation, or the owner closing the events) commits a turn half way.
        A turn that fails (an error from the service, or anything raised) commits nothing:
        its input row is kept, marked interrupted, for the owner to delete as it gives the
        messages back."""
        if self.guard.halted is not None:
            await self.save_halt()
            raise self.refusal(self.guard.halted)
        role = self.role.read()
        if role.warning:
            self.debug.write("warning", "role_doc", message=role.warning)
            yield RoleWarning(role.warning)
        # The lane is split off before the turn begins: a malformed one halts the panel with
        # nothing stored, spent or sent, so its messages go back and the operator fixes it.
        system = await self._take_lane(role)
        self.turns_begun += 1
        refused = self.guard.begin_turn(self.turns_begun)
        if refused is not None:  # the guard logged it as it made it
            await self.save_halt()
            raise self.refusal(refused)
        ttl = self.cache_ttl.start_turn(self.config.prompt_cache_ttl)
        input_blocks = ({"type": "text", "text": text},)
        user_id, parts = await self.store.begin_turn_and_read(
            NewRow(
                "user",
                input_blocks,
                estimate_tokens(text),
                label=label,
                consumed_ids=tuple(consumed_ids),
            )
        )
        self.in_flight_row = self.last_turn_row = user_id
        self.sends.open(user_id, notes)
        # Always with its source, even with no ids: the turn's sends go back to that source.
        consumed = Consumed(source, tuple(consumed_ids))
        recorder = TurnRecorder(result_cap=self.config.tool_result_max_chars)
        committed = False
        # A driver whose turn is done (it said Done): closed after the commit, not before, so
        # the commit does not wait for the CLI process to exit (about 0.1 s).
        finished: AsyncGenerator[DriverEvent, None] | None = None
        try:
            for attempt in (1, 2):
                failure = None
                driving = self._drive(system, user_id, text, inbox, ttl, parts, role.text)
                try:
                    async for event in driving:
                        if isinstance(event, ErrorEvent):
                            failure = event
                            break
                        recorder.add(event)
                        self.guard.observe(event)
                        await self.files.observe(event)
                        yield event
                        # Closing the driver ends the turn; the halted call never ran. A request's
                        # usage can come between the call and its refusal: go on to the refusal.
                        if self.guard.halted is not None and not isinstance(event, Usage | Cost):
                            break
                        if isinstance(event, Done):
                            finished = driving
                            break
                finally:
                    if finished is not driving:
                        await driving.aclose()
                if failure is None:
                    break
                self.debug.write(
                    "error", "turn_failed", error_kind=failure.kind, message=failure.message
                )
                if failure.kind == "prompt_too_long" and attempt == 1 and not recorder.blocks:
                    evicted = await evict_bulk(self.store)
                    self.debug.write("eviction", "prompt_too_long_recovery", rows=evicted)
                    parts = await self.store.prompt_parts()  # the window as the eviction left it
                    continue
                await self.store.recover_interrupted()
                # Nothing more to write: the input row is kept, marked; its messages were not
                # consumed and its queued sends are dropped (they go with the re-run, if any).
                committed = True
                raise error_for(failure)
            halt = await self.guard.finish_turn()
            if halt is not None:
                recorder.note(halt.notice())
            # With no post-turn care to come first, the trim goes in the commit's hop.
            care = care_due(self.config, recorder.final_blocks())
            ids, plan = await self._commit(
                user_id, recorder, consumed, self.sends.close(), self.sends.notes, trim=not care
            )
            committed = True
            if halt is not None:
                yield await self._halt(halt, user_id, ids)
            yield TurnCommitted(user_id, ids)
        except BaseException as exc:
            if not committed and not _is_stop(exc):
                # A fault, not a stop (a driver or tool that raised, a commit that failed): the
                # turn consumed nothing and sends nothing, like a failure the service reported.
                # Its messages come again (counted toward the poison limit by the owner); its
                # input is kept, marked, until the owner deletes it as it gives them back.
                committed = True
                with anyio.CancelScope(shield=True), anyio.move_on_after(10):
                    await self.store.recover_interrupted()
                self.debug.write("error", "turn_raised", user_row_id=user_id, error=repr(exc))
            raise
        finally:
            self.cache_ttl.end_turn()
            user_row, self.in_flight_row = self.in_flight_row, None
            sends, notes = self.sends.close(), self.sends.notes
            self.sends.discard()
            self.guard.close_turn()  # closes the turn's budget and sentinel state if still open
            if self.unlogged_halt is not None:  # halted, then stopped before it was stored
                halts.log_halt(self.debug, self.unlogged_halt, user_row_id=user_row)
                self.unlogged_halt = None
            if not committed:
                # Stopped mid-turn (cancelled or closed): keep what was said, say it stopped.
                # This commit is the turn's: its messages count as consumed and its queued
                # sends go out, since what the model did before the stop stands and the input
                # will not run again.
                with anyio.CancelScope(shield=True), anyio.move_on_after(10):
                    recorder.note(STOPPED_NOTE)
                    await self._commit(user_id, recorder, consumed, sends, notes)
                    self.debug.write("warning", "turn_stopped", user_row_id=user_id)
            if finished is not None:
                await _finish(finished, self.debug)
        if care:
            await after_turn(self.store, self.config, self.debug, recorder.final_blocks())
            plan = await trim_window(self.store, self.config, self.debug)
        else:
            plan = await note_trim(self.store, self.debug, plan)
        if plan is not None:
            yield Trimmed(plan.evict_ids, plan.forced_ids)

    async def _take_lane(self, role: RoleDocRead) -> str:
        """Split this turn's role doc: give its lane to the guard, return the system prompt.
        A malformed front matter halts the panel (PanelHaltedError, nothing stored)."""
        source = str(self.role.path) if self.role.path is not None else "role doc"
        try:
            lane, body = split_front_matter(role.text, source)
        except LaneError as exc:
            at = datetime.now(UTC)
            record = HaltRecord("lane", "lane", str(exc), turn=self.turns_begun + 1, at=at)
            self.guard.halt_now(record)  # the listeners log it and tell the host
            halted = self.guard.halted or record
            await self.save_halt()
            raise self.refusal(halted) from None
        self.guard.set_lane(lane, self.cwd)  # the one holder of the lane in force
        return body

    async def _drive(
        self,
        system: str,
        user_id: int,
        text: str,
        inbox: str | None,
        ttl: CacheTtl,
        parts: PromptParts,
        role_text: str,
    ) -> AsyncGenerator[DriverEvent, None]:
        # One read of the window; only rows new or changed since the last turn are rendered.
        window, slots = parts
        prompt = build_prompt(
            role_doc=system,
            transcript=self.renders.transcript(window, leave_out=user_id),
            slots=slots,
            manifest=await self.manifest_text(),
            inbox=inbox,
            input_text=text,
            cache_ttl=ttl,
        )
        request = turn_request(
            self, system=prompt.system, blocks=prompt.blocks, ttl=ttl, role_text=role_text
        )
        async with aclosing(self.driver.run_turn(request)) as events:
            async for event in events:
                yield event

    async def _commit(
        self,
        user_id: int,
        recorder: TurnRecorder,
        consumed: Consumed | None,
        sends: Sequence[OutboxDraft],
        notes: Mapping[str, str],
        *,
        trim: bool = False,
    ) -> tuple[tuple[int, ...], TrimPlan | None]:
        """Store the turn (and with `trim`, trim the window to its caps, in the same hop)."""
        # The turn's figures go with it, in the same transaction: the guard has closed the
        # turn by now (finish_turn, or close_turn on a stop), so its spend is final.
        figures = {
            **notes,
            **halts.turn_figures(recorder.usage, recorder.cost_usd, self.guard.spend()),
        }
        commit = partial(
            TurnStore.commit_turn,
            user_row_id=user_id,
            rows=recorder.rows(),
            consumed=consumed,
            outbox=list(sends),
            meta=figures,
        )
        caps = window_caps(self.config) if trim else None
        ids, plan = await self.store.run(commit_then_trim, commit, caps)
        return tuple(ids), plan


async def _finish(driving: AsyncGenerator[DriverEvent, None], debug: DebugLog) -> None:
    """Let a driver whose turn said Done end on its own (the CLI process exits), after the
    commit. What it yields after Done is not part of the turn; what it raises is logged."""
    with anyio.CancelScope(shield=True):
        with anyio.move_on_after(FINISH_TIMEOUT_S):
            try:
                async for _ in driving:
                    pass
            except Exception as exc:
                debug.write("error", "driver_after_done", error=repr(exc))
        await driving.aclose()


def _is_stop(exc: BaseException) -> bool:
    """Whether `exc` stops a turn rather than fails it: a cancellation, or the owner closing
    the turn's events (it was cancelled, or stops reading)."""
    return isinstance(exc, (anyio.get_cancelled_exc_class(), GeneratorExit))
