"""One delivered turn: run it, log what streams, then settle the claims and publish its sends.

Settling is the rule that makes delivery exactly-once in effect. After the turn, however it
ended (finished, failed, halted, cancelled by shutdown), the ids that the turn store recorded
as consumed are acked and the others are given back. The store keeps consumed ids in a table
of their own, written in the turn's commit, so no trim or eviction of the turn's rows can
make the host forget them. A turn that committed (even one stopped half way: its rows are
kept, marked) has consumed its messages; a turn that failed before committing has not, and
its messages come again. A batch given back for any other reason (halted, stopping) does
not count, and neither does a delivery cut off by the host's death.

Only a stop (cancellation) commits a turn half way. A turn that raised (its driver or a tool
failed in a way that is not a service error) committed nothing (Session.turn): it failed on
its own, like a driver error, and is settled as one. A follow-up turn (followup.py) consumes
no message; its commit settles the sends it was owed.

A turn that failed on its own is judged by poison.py: a batch's messages come back counted
once and are then delivered alone; a message that failed alone `max_attempts` times (the
host's bus has it at `POISON_ATTEMPTS`) is dead-lettered by the host itself (it has just
checked the store), with the error, and logged, unless the panel looks broken. The failed
turn's input row (the session kept it, marked interrupted) is deleted before its messages go
back: they come again, or are dead letters, so the row would only repeat them to the model
on every later turn. The row goes first, so a host that dies between the two leaves no row
behind, and the message, still leased, comes back at the next start (uncounted).

The settle is shielded and bounded, so a cancelled host still settles; a host killed before
it settles leaves the leases, which the next start releases, and the stored ids stop a second
turn on the same messages. The order is: commit, log it (on disk), ack, publish the turn's
outbox (outbox.py), log the end (on disk).

Everything here is done on the one bus the turn's claims came from (`bus`): its identity is
the turn's `source` in the store, and it takes the acks, nacks and dead letters. When the
team's bus is foreign, operator input comes from the host's own bus (life.py), so a turn's
bus is not always `host.bus`.

One exception, for a face whose operator watches (the solo REPL: `redeliver_failed_input`
off): the operator input of a turn that failed with a driver error is acked, not given back.
The operator saw the error at once and the input is kept in the window, marked; delivering it
again on every restart would repeat a failure that needs the operator (no credentials).
"""

from __future__ import annotations

import json
from contextlib import aclosing

import anyio

from panels.host.delivery.feed import TurnInput, operator_route
from panels.host.delivery.followup import FOLLOW_UP_LABEL, UNLOGGED_META, UNSENT_META
from panels.host.delivery.outbox import TurnOutbox, publish
from panels.host.delivery.poison import Verdict, judge
from panels.host.delivery.tickets import Tickets
from panels.host.services import TurnContext
from panels.host.turns.checkpoints import before_turn
from panels.host.turns.panel import PanelRunner
from panels.hostdb.catalogue import (
    DeadLettered,
    Delivered,
    Settled,
    ToolAnswered,
    ToolCalled,
    TurnEnded,
    TurnStarted,
    TurnStored,
    Warned,
    WindowTrimmed,
)
from peerbus import BusBackend, Claim, Message
from runtime.errors import DriverError, PanelHaltedError
from runtime.turn.driver import Cost, TextDelta, Thinking, ToolCall, ToolResult, Usage
from runtime.turn.events import RoleWarning, Trimmed, TurnCommitted
from runtime.turn.session import Session

SETTLE_TIMEOUT = 15.0
PREVIEW = 400


def preview(value: object, limit: int = PREVIEW) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


async def run_turn(
    runner: PanelRunner,
    session: Session,
    bus: BusBackend,
    claims: list[Claim],
    turn_input: TurnInput,
    tickets: Tickets,
    *,
    follow_up: int = 0,
) -> None:
    """Run one turn on `turn_input`, claimed from `bus`; raise the driver's error after
    settling, if any. `follow_up`: the turn is that round of a follow-up (followup.py),
    whose commit settles the note it answers."""
    host, log = runner.host, runner.host.log
    delivered = {m.id: m for c in claims for m in c.messages}
    if bus is host.bus:
        # What the bus tools may name (ack, forward checks): the team's bus's messages only;
        # ids on the host's own operator bus would collide with them.
        runner.remember(list(delivered.values()))
    turn = TurnContext(runner.turns + 1, delivered, host.clock(), follow_up=follow_up)
    runner.turn = turn
    # All the bus tools' sends may touch, built once for this turn (bustools.py asks it).
    runner.outbox = TurnOutbox(runner.name, turn, session, runner.send_limits, host.bus.options,
                               runner.seen, log.emit)  # fmt: skip
    if bus is host.operator_bus:  # tickets are by operator message id (that bus's ids)
        tickets.delivered(runner.name, turn_input.consumed_ids, turn.number)
    log.emit(Delivered(panel=runner.name, turn=turn.number, ids=turn_input.consumed_ids,
                       senders=turn_input.senders, stale_ids=turn_input.stale_ids,
                       bus=bus.identity))  # fmt: skip
    runner.set_state(runner.state, "")
    runner.signal("turn_started")
    log.emit(TurnStarted(panel=runner.name, turn=turn.number, input=preview(turn_input.text)))
    error: DriverError | None = None
    fault: Exception | None = None  # raised by the turn: not a driver error, not a stop
    outcome = "stopped"
    failed = False  # the turn failed on its own (not stopped, refused or cut off)
    scope = anyio.CancelScope()
    runner.turn_scope = scope
    row_before = session.last_turn_row
    try:
        with scope:
            try:
                # Before the turn may write: a checkpoint of the panel's files (rewind).
                await before_turn(runner, session, turn.number, turn_input.text)
                events = session.turn(
                    turn_input.text,
                    consumed_ids=turn_input.consumed_ids,
                    source=bus.identity,
                    notes={UNSENT_META: "", UNLOGGED_META: "1"} if follow_up else None,
                    label=FOLLOW_UP_LABEL if follow_up else "",
                )
                async with aclosing(events) as stream:
                    async for event in stream:
                        observe(runner, turn, event)
                        if isinstance(event, TurnCommitted):
                            await log.commit()  # on disk before the ack
                            if follow_up:
                                await session.store.set_meta(UNLOGGED_META, "")
                outcome = "done"
            except DriverError as exc:
                error, outcome, failed = exc, "failed", True
            except PanelHaltedError:
                # The guard refused the turn (a limit reached as it began), or a required
                # checkpoint could not be taken: the panel halts.
                outcome = "refused"
            except Exception as exc:
                fault = exc
                # A fault of this turn's own (the life fails and restarts): the session
                # committed nothing, so its batch goes back counted, as for a driver error.
                outcome, failed = "failed", True
                raise
    finally:
        runner.turn_scope = None
        with anyio.CancelScope(shield=True):
            with anyio.move_on_after(SETTLE_TIMEOUT):
                drop = error is not None and not host.redeliver_failed_input
                cause = error if error is not None else fault
                reason = f"its turn failed: {cause}" if cause is not None else "its turn failed"
                row = session.last_turn_row if session.last_turn_row != row_before else None
                await settle(runner, session, bus, claims, failed=reason if failed else None,
                             drop_operator=drop, error=error, input_row=row)  # fmt: skip
                await publish(runner.name, session.store, host)
            runner.failed_turn_ids = frozenset(delivered) if failed else frozenset()
            if outcome == "done":
                runner.failure_book.turn_done()
            if failed:
                runner.send_limits.forget_turn(turn.number)  # its sends never went out
            finish(runner, turn, outcome, error, tickets)  # always, even past the deadline
            await log.commit()  # the end of the turn (and any dead letter) is on disk
    if error is not None:
        raise error


def observe(runner: PanelRunner, turn: TurnContext, event: object) -> None:
    log, name = runner.host.log, runner.name
    if isinstance(event, TextDelta):
        log.text(name, event.text)
        runner.signal("text")
    elif isinstance(event, Thinking):
        runner.signal("thinking")
    elif isinstance(event, ToolCall):
        turn.tool_calls += 1
        turn.call_names[event.id] = event.name
        runner.recent_calls.append(
            (runner.host.clock(), f"{event.name} {preview(event.input, 80)}")
        )
        log.emit(ToolCalled(panel=name, id=event.id, tool=event.name, input=preview(event.input)))
        runner.signal("tool_call")
    elif isinstance(event, ToolResult):
        log.emit(ToolAnswered(panel=name, id=event.tool_use_id, error=event.is_error,
                              content=preview(event.content)))  # fmt: skip
        runner.signal("tool_result")
    elif isinstance(event, Usage):
        turn.input_tokens += event.prompt_tokens
        turn.output_tokens += event.output_tokens
    elif isinstance(event, Cost):
        turn.usd = max(turn.usd, event.usd)
    elif isinstance(event, RoleWarning):
        log.emit(Warned(panel=name, message=event.message))
    elif isinstance(event, Trimmed):
        log.emit(WindowTrimmed(panel=name, evicted=event.evicted, forced=event.forced))
    elif isinstance(event, TurnCommitted):
        log.emit(TurnStored(panel=name, user_row=event.user_row_id, rows=event.row_ids))


async def settle(
    runner: PanelRunner,
    session: Session,
    bus: BusBackend,
    claims: list[Claim],
    *,
    failed: str | None = None,
    drop_operator: bool = False,
    error: BaseException | None = None,
    input_row: int | None = None,
) -> None:
    """Ack what the store says was consumed; give the rest back at once (on `bus`, where
    `claims` came from).

    `failed` (the reason) when the turn failed on its own (`error`, if a driver error): what
    it gives back is judged by poison.py, and a poison message is dead-lettered here; the
    turn's interrupted `input_row` is deleted first when nothing of the turn was consumed.
    With `drop_operator`, the operator route's messages are acked whatever the store says."""
    log = runner.host.log
    source = bus.identity
    consumed = await session.store.committed(source, [i for c in claims for i in c.ids])
    dropped = {
        i
        for c in claims
        if drop_operator and c.recipient == operator_route(runner.name)
        for i in c.ids
    }
    if failed is not None and input_row is not None and not consumed and not dropped:
        await _forget_input(session, input_row)
    rest = [m for c in claims for m in c.messages if m.id not in consumed and m.id not in dropped]
    limit = bus.options.max_attempts
    verdict = Verdict()
    if failed is not None:
        turn_size = sum(len(c.messages) for c in claims)
        verdict = judge(runner.failure_book, error, turn_size, rest, limit=limit)
    acked: list[int] = []
    released: list[int] = []
    for claim in claims:
        done = [i for i in claim.ids if i in dropped or i in consumed]
        if done:
            acked += (await bus.ack(claim, only=done)).settled
        mine = {m.id for m in claim.messages if m.id not in done}
        if not mine:
            continue
        counted = [i for i in verdict.counted if i in mine]
        if counted:
            released += (await bus.nack(claim, only=counted, count=True)).settled
        poison = [m for m in claim.messages if m.id in verdict.poison]
        if poison:
            await _dead_letter(runner, bus, claim, poison, failed or "its turn failed", limit)
        judged = set(counted) | {m.id for m in poison}
        back = [i for i in sorted(mine) if i not in judged]
        if back:
            released += (await bus.nack(claim, only=back, count=False)).settled
        for ident in verdict.kept:
            if ident in mine:
                log.emit(Warned(panel=runner.name, message=(
                    f"message {ident} failed {limit} times alone, but so did another message "
                    "since this panel's last good turn: the panel looks broken, so the message "
                    "stays owed, not dead-lettered; fix the panel, then resume it")))  # fmt: skip
    if acked:
        await session.store.mark_acked(source, acked)
    log.emit(Settled(panel=runner.name, acked=tuple(acked), released=tuple(released)))


async def _dead_letter(
    runner: PanelRunner,
    bus: BusBackend,
    claim: Claim,
    poison: list[Message],
    failed: str,
    limit: int,
) -> None:
    reason = f"{failed} ({poison[0].attempt} of {limit} attempts, alone)"
    given_up = await bus.fail(claim, reason=reason, only=[m.id for m in poison])
    for message in poison:
        if message.id in given_up.settled:
            runner.dead_letters += 1
            runner.poisoned.add(message.id)
            runner.host.log.emit(DeadLettered(panel=runner.name, id=message.id,
                                              sender=message.sender, reason=reason))  # fmt: skip


async def _forget_input(session: Session, row_id: int) -> None:
    """Delete a failed turn's input row, if the session kept it marked interrupted: its
    messages come again (or become dead letters), so the row would only repeat them."""
    row = await session.store.row(row_id)
    if row is not None and row.status == "interrupted":
        await session.store.delete_rows([row_id])


def finish(
    runner: PanelRunner,
    turn: TurnContext,
    outcome: str,
    error: DriverError | None,
    tickets: Tickets,
) -> None:
    runner.turn = None
    runner.outbox = None
    runner.host.turn_ended.set()
    runner.turns += 1
    runner.note_turn_end(runner.host.clock())
    runner.host.log.emit(
        TurnEnded(
            panel=runner.name,
            turn=turn.number,
            outcome=outcome,
            error=str(error) if error else None,
            tool_calls=turn.tool_calls,
            input_tokens=turn.input_tokens,
            output_tokens=turn.output_tokens,
            usd=round(turn.usd, 6),
        )
    )
    tickets.ended(runner.name, turn.number, outcome, str(error) if error else None)
    runner.set_state(runner.resting_state(), runner.halt_detail())
