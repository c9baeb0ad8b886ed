"""One life of a panel: open its session, register on the bus, then claim and run turns.

A life ends by returning (the host is stopping) or by raising (the supervisor records the
failure and asks the restart policy). Each life registers the panel again, which bumps its
epoch and gives back at once what the previous life held leased; messages addressed to the
previous epoch then arrive flagged as stale.

The loop, while the panel may run: take a turn slot, claim operator input (its own route,
so it goes first and passes a closed inbox), then the peer inbox if it is on; skip what the
turn store already consumed (a redelivery after a crash: acked, not run again); run the
turn; settle. With nothing to do it has a warm spare readied for its next turn (spares.py)
and waits for its wake-up flag, set by the bus watcher and by control verbs; a panel that
finds every turn slot taken readies its spare before it waits for one. Before its
first claim, a life publishes what an earlier life's committed turns queued and did not get
out (outbox.py): a crash between a commit and its publish loses no send.

When the team's bus is foreign, operator input waits on the host's own bus (services.py).
The turn store keeps consumed ids per bus (its `source`), so a turn then takes from one bus
only: operator input alone when some waits, else the peer inbox. With one bus, a turn takes
both, operator input first.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AsyncExitStack
from typing import Any

import anyio
import anyio.abc

from panels.host.delivery.feed import (
    HOST,
    OPERATOR,
    TurnInput,
    claim_limits,
    compose_turn,
    operator_route,
)
from panels.host.delivery.followup import (
    FOLLOW_UP_LABEL,
    UNLOGGED_META,
    UNSENT_META,
    decode,
    note_text,
)
from panels.host.delivery.inboxes import bus_counts
from panels.host.delivery.outbox import publish
from panels.host.delivery.tickets import Tickets
from panels.host.services import HostServices
from panels.host.turns.instances import prepare_panel
from panels.host.turns.panel import PanelRunner
from panels.host.turns.spares import cool, warm
from panels.host.turns.states import PanelState
from panels.host.turns.turn import run_turn
from panels.hostdb.catalogue import DeadLettered, PanelStarted, RedeliverySkipped
from panels.team import PanelSpec
from panels.unconfined import tools_state
from peerbus import BusBackend, Claim, read_original_watermark
from runtime.guard.policy import containment_for
from runtime.instance.home import InstancePaths
from runtime.turn.driver import AgentDriver, ToolSpec
from runtime.turn.open import open_session
from runtime.turn.session import Session


async def live(
    runner: PanelRunner,
    tools: Sequence[ToolSpec],
    tickets: Tickets,
    *,
    task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
) -> None:
    host, spec = runner.host, runner.spec
    runner.set_state(PanelState.STARTING)
    driver = host.drivers(spec)
    contained = containment_for(driver, host.team.workdir)
    runner.sandbox = tools_state(driver)  # for the status row: every face says it
    prepared = await anyio.to_thread.run_sync(
        lambda: prepare_panel(spec, host.team, runner, home=host.home, containment=contained)
    )
    # The one guard: this life's policy and the instance's settings (with the team's
    # overrides); what it spent and saw in earlier lives is kept.
    runner.guard.reconfigure(prepared.guard_settings)
    async with AsyncExitStack() as stack:
        session = await stack.enter_async_context(
            open_session(
                spec.instance,
                driver=driver,
                approver=prepared.approver,
                home=host.home,
                cwd=host.team.workdir,
                tools=tools,
                guard=runner.guard,
            )
        )
        prepared.apply(session)
        if host.loops is not None:  # the team loops measure each turn's change (loops/world.py)
            runner.guard.world = host.loops.tap_world(spec.name, runner.guard.world)
        runner.session = session
        runner.model = session.config.model
        runner.epoch = await host.bus.register(
            spec.name, senders=spec.listens_to, **await _take_over(host, spec)
        )
        # What the panel writes is stamped with who wrote it (panel, epoch, turn).
        session.panel, session.epoch = spec.name, runner.epoch
        session.shared_memory = host.shared_memory
        await host.operator_bus.register(operator_route(spec.name), senders=())
        host.log.emit(PanelStarted(panel=spec.name, epoch=runner.epoch, instance=spec.instance,
                                   model=runner.model, created=prepared.created))  # fmt: skip
        runner.dead_letters = await _dead_letter_count(runner)
        await runner.count_window()
        await _note_acks(runner, session)
        await publish(spec.name, session.store, host)
        runner.set_state(runner.resting_state(), runner.halt_detail())
        task_status.started()
        try:
            await _loop(runner, session, tickets, driver)
        finally:
            runner.session = None
            await cool(driver)


async def _take_over(host: HostServices, spec: PanelSpec) -> dict[str, Any]:
    """How a solo instance's route starts on a foreign table the original polled: at the
    original's `peer_poll_watermark`, else at the table's highest id (the original skips the
    backlog on first enable too), else from the first row when the operator asks. Only the
    route's first registration uses it; an empty dict keeps the bus's own start."""
    if not host.team.take_over_original or host.bus.mode != "compat":
        return {}
    mark = InstancePaths.for_name(spec.instance, host.home).root / "peer_poll_watermark"
    start = await anyio.to_thread.run_sync(read_original_watermark, mark)
    return {
        "take_over": True,
        "start_after": start,
        "original_watermark": mark,
        "replay_backlog": host.team.replay_backlog,
    }


async def _loop(
    runner: PanelRunner, session: Session, tickets: Tickets, driver: AgentDriver
) -> None:
    host = runner.host
    # A watchdog must be able to act while the workers hold every slot: it has its own.
    slots = anyio.CapacityLimiter(1) if runner.spec.is_watchdog else host.slots
    while not runner.stopping:
        wake = runner.wakeup.event
        if runner.blocked():
            await cool(driver)  # paused, halted or stopping: no process waits for a turn
            if not runner.in_turn:
                runner.set_state(runner.resting_state(), runner.detail)
            await host.log.commit()  # a halt the guard made as the panel stopped is on disk
            await wake.wait()
            continue
        if slots.available_tokens < 1:
            await warm(runner, session, driver)  # every slot is taken: ready the turn meanwhile
        async with slots, runner.exclusive:
            ran = await _claim_and_run(runner, session, tickets)
            if ran:
                await runner.count_window()
        if not ran:
            await warm(runner, session, driver)  # nothing to deliver: ready the next turn
            with anyio.move_on_after(host.idle_recheck):
                await wake.wait()


async def _claim(runner: PanelRunner) -> tuple[BusBackend, list[Claim]]:
    """The next turn's claims (those with messages) and the one bus they came from.

    Operator input first. With two buses, operator input that waits makes a turn of its own
    (one turn, one source in the turn store); with one, the peer inbox joins it, within what
    one turn may answer (delivery/feed.py: `claim_limits`)."""
    host, spec = runner.host, runner.spec
    limits = claim_limits(spec.batch, runner.send_limits.limits.per_turn)
    operator = await host.operator_bus.claim(
        operator_route(spec.name),
        senders=(),
        max_messages=limits.operator,
        max_tokens=limits.max_tokens,
        lease=host.lease,
    )
    claims: list[Claim] = [operator]
    if host.operator_bus is not host.bus:
        await _report_dead_letters(runner, claims)
        if operator.messages or not runner.inbox_on:
            return host.operator_bus, [c for c in claims if c.messages]
        claims = []
    room = limits.peers(len(operator.messages))
    if runner.inbox_on and room > 0:
        peers = await host.bus.claim(
            spec.name,
            senders=spec.listens_to,
            max_messages=room,
            max_tokens=limits.max_tokens,
            lease=host.lease,
        )
        claims.append(peers)
    await _report_dead_letters(runner, claims)
    return host.bus, [c for c in claims if c.messages]


async def _claim_and_run(runner: PanelRunner, session: Session, tickets: Tickets) -> bool:
    """Claim and run one turn; False when there was nothing to deliver. A follow-up owed
    to the panel (followup.py) runs first, alone."""
    host, spec = runner.host, runner.spec
    limits = claim_limits(spec.batch, runner.send_limits.limits.per_turn)
    if await session.store.get_meta(UNLOGGED_META) == "1":
        # A follow-up turn committed, and the life ended before its event was on disk: it
        # was the panel's last turn, and it is logged now, as a crash's redelivery is.
        rows = [r.id for r in await session.store.rows() if r.label == FOLLOW_UP_LABEL]
        turns = tuple(rows[-1:])  # () when the window has let it go since
        await host.log.commit(RedeliverySkipped(panel=spec.name, ids=(), turns=turns))
        await session.store.set_meta(UNLOGGED_META, "")
    owed = decode(await session.store.get_meta(UNSENT_META))
    if owed is not None:
        # Sends a committed turn could not make: a turn of their own, consuming no message,
        # whose commit settles the note (it runs again until it commits).
        follow_up = TurnInput(note_text(owed, limits.per_turn), (), (), (HOST,))
        await run_turn(runner, session, host.bus, [], follow_up, tickets, follow_up=owed.round)
        return True
    # Every ack, nack and store lookup below is on the bus the claims came from.
    bus, claims = await _claim(runner)
    if not claims:
        return False
    if runner.halt is not None or runner.paused or runner.stopping:
        # Halted, paused or stopping while it claimed: give the batch back untouched, uncounted.
        for claim in claims:
            await bus.nack(claim, count=False)
        return True
    source = bus.identity
    consumed = await session.store.committed(source, [i for c in claims for i in c.ids])
    already = set(consumed)
    if already:
        # Redelivered after a crash between the turn's commit and its ack: processed once.
        # Said on disk before the ack: the turns it names may have died before their log did.
        turns = tuple(sorted(set(consumed.values())))
        skipped = RedeliverySkipped(panel=spec.name, ids=tuple(sorted(already)), turns=turns)
        await host.log.commit(skipped)
        acked: list[int] = []
        for claim in claims:
            acked += (await bus.ack(claim, only=already)).settled
        # Only the acks the bus made are noted: one that did not take (its lease was lost)
        # stays unacked in the store, so the next life asks the bus again (_note_acks).
        await session.store.mark_acked(source, sorted(acked))
        if bus is host.operator_bus:  # tickets are by operator message id (that bus's ids)
            tickets.already_done(already)
    op_claim = claims[0] if claims[0].recipient == operator_route(spec.name) else None
    if op_claim is not None:
        already |= await _refuse_forged(runner, bus, op_claim)
    from_operator = [m for m in (op_claim.messages if op_claim else ()) if m.id not in already]
    from_peers = [m for c in claims if c is not op_claim for m in c.messages if m.id not in already]
    turn_input = compose_turn(from_operator, from_peers, max_tokens=limits.max_tokens)
    if turn_input is None:
        return True
    await run_turn(runner, session, bus, claims, turn_input, tickets)
    return True


async def _refuse_forged(runner: PanelRunner, bus: BusBackend, claim: Claim) -> set[int]:
    """Dead-letter, unread, the rows on the panel's operator route that the operator did not
    write (its text would be taken as the operator's words); their ids."""
    forged = [m for m in claim.messages if m.sender != OPERATOR]
    if not forged:
        return set()
    reason = "only the operator writes to a panel's operator route"
    given_up = await bus.fail(claim, reason=reason, only=[m.id for m in forged])
    for message in forged:
        if message.id in given_up.settled:
            runner.host.log.emit(DeadLettered(panel=runner.name, id=message.id,
                                              sender=message.sender, reason=reason))  # fmt: skip
    runner.dead_letters += len(given_up.settled)
    await runner.host.log.commit()
    return {m.id for m in forged}


async def _report_dead_letters(runner: PanelRunner, claims: list[Claim]) -> None:
    """Rows the bus gave up as it claimed (a payload it cannot read, or the backstop count)."""
    dead = [(ident, reason) for c in claims for ident, reason in c.dead_letters]
    if not dead:
        return
    for ident, reason in dead:
        runner.host.log.emit(DeadLettered(panel=runner.name, id=ident, reason=reason))
    runner.dead_letters += len(dead)
    await runner.host.log.commit()


async def _dead_letter_count(runner: PanelRunner) -> int:
    """The messages the buses hold as given up for the panel's two routes (for `ps`)."""
    host = runner.host
    counts = await bus_counts(host.bus, host.operator_bus, {runner.name: runner})
    return counts[runner.name].dead


async def _note_acks(runner: PanelRunner, session: Session) -> None:
    """Note in the store the acks an earlier life made but died before noting: the bus says
    which of the store's unacked ids it will never deliver again (the rest come back, and
    the redelivery path notes them). Without this they would never age out of the store.
    Each bus is asked about the ids the store holds under its own identity."""
    host, name, operator = runner.host, runner.name, operator_route(runner.name)
    routes: list[tuple[BusBackend, tuple[str, ...]]] = [
        (host.bus, (name,)),
        (host.operator_bus, (operator,)),
    ]
    if host.operator_bus is host.bus:
        routes = [(host.bus, (name, operator))]
    for bus, names in routes:
        source = bus.identity
        unacked = await session.store.unacked(source)
        if not unacked:
            continue
        done: set[int] = set()
        for route in names:
            done |= await bus.settled(route, unacked)
        if done:
            await session.store.mark_acked(source, sorted(done))
