"""One delivered turn: run it, log what streams, then settle the claims against the store.

Settling is the rule that makes delivery exactly-once in effect: after the turn, however it
ended (finished, failed, halted, cancelled by shutdown), the ids the turn store recorded as
consumed are acked and the others are given back. A turn that committed (even one stopped
half way: its rows are kept, marked) has consumed its messages; a turn that failed before
committing has not, and its messages come again. The settle is shielded and bounded, so a
cancelled host still settles; a host killed before it settles leaves the leases, which the
next start releases, and the stored ids stop a second turn on the same messages.

One exception, for a face whose operator watches (the solo REPL: `redeliver_failed_input`
off): the operator input of a turn that failed with a driver error is acked, not given back.
The operator saw the error at once and the input is kept in the window, marked; delivering it
again on every restart would repeat a failure that needs the operator (no credentials).
"""

from __future__ import annotations

import json
from contextlib import aclosing

import anyio

from panels.host.delivery import TurnInput, operator_route
from panels.host.panel import PanelRunner
from panels.host.services import TurnContext
from panels.host.tickets import Tickets
from panels.hostdb.catalogue import (
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
from peerbus import Claim
from runtime.driver import Cost, TextDelta, Thinking, ToolCall, ToolResult, Usage
from runtime.errors import DriverError, PanelHaltedError
from runtime.session import RoleWarning, Session, Trimmed, TurnCommitted

SETTLE_TIMEOUT = 15.0
PREVIEW = 400


def preview(value: object, limit: int = PREVIEW) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


async def run_turn(
    runner: PanelRunner,
    session: Session,
    claims: list[Claim],
    turn_input: TurnInput,
    tickets: Tickets,
) -> None:
    """Run one turn on `turn_input`; raise the driver's error after settling, if any."""
    host, log = runner.host, runner.host.log
    delivered = {m.id: m for c in claims for m in c.messages}
    runner.remember(list(delivered.values()))
    turn = TurnContext(runner.turns + 1, delivered, host.clock())
    runner.turn = turn
    tickets.delivered(runner.name, turn_input.consumed_ids, turn.number)
    log.emit(Delivered(panel=runner.name, turn=turn.number, ids=turn_input.consumed_ids,
                       senders=turn_input.senders, stale_ids=turn_input.stale_ids))  # fmt: skip
    runner.set_state(runner.state, "")
    runner.signal("turn_started")
    log.emit(TurnStarted(panel=runner.name, turn=turn.number, input=preview(turn_input.text)))
    error: DriverError | None = None
    outcome = "stopped"
    scope = anyio.CancelScope()
    runner.turn_scope = scope
    try:
        with scope:
            try:
                events = session.turn(turn_input.text, consumed_ids=turn_input.consumed_ids)
                async with aclosing(events) as stream:
                    async for event in stream:
                        observe(runner, turn, event)
                outcome = "done"
            except DriverError as exc:
                error, outcome = exc, "failed"
            except PanelHaltedError:
                # The guard refused the turn (a limit reached as it began): the panel halts.
                outcome = "refused"
    finally:
        runner.turn_scope = None
        with anyio.CancelScope(shield=True), anyio.move_on_after(SETTLE_TIMEOUT):
            drop = error is not None and not host.redeliver_failed_input
            await settle(runner, session, claims, drop_operator=drop)
        finish(runner, turn, outcome, error, tickets)
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
    runner: PanelRunner, session: Session, claims: list[Claim], *, drop_operator: bool = False
) -> None:
    """Ack what the store says was consumed; give the rest back at once.

    With `drop_operator`, the operator route's messages are acked whatever the store says."""
    bus = runner.host.bus
    consumed = await session.store.consumed_ids()
    acked: list[int] = []
    released: list[int] = []
    for claim in claims:
        dropped = drop_operator and claim.recipient == operator_route(runner.name)
        done = [i for i in claim.ids if dropped or i in consumed]
        rest = [i for i in claim.ids if i not in done]
        if done:
            acked += (await bus.ack(claim, only=done)).settled
        if rest:
            released += (await bus.nack(claim, only=rest)).settled
    runner.host.log.emit(Settled(panel=runner.name, acked=tuple(acked), released=tuple(released)))


def finish(
    runner: PanelRunner,
    turn: TurnContext,
    outcome: str,
    error: DriverError | None,
    tickets: Tickets,
) -> None:
    runner.turn = None
    runner.host.turn_ended.set()
    runner.turns += 1
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
