"""Supervising panels: one task per panel, restarted by the pure restart policy.

`supervise` runs lives of one panel until the host stops. A life that raises is recorded
(`panel_failed` event, state `failed`) and the restart policy says when to start the next,
or to give up (`panel_given_up`); either way the exception stops here, so one panel never
takes the others down. `Cancelled` is never caught (it is not an `Exception` on trio, and
anyio's cancellation on asyncio is re-raised by the checkpoints below). Readiness is
reported once the first life registered on the bus, or once the first life failed, so a
broken panel cannot hold up the host's start.
"""

from __future__ import annotations

from collections.abc import Sequence

import anyio
import anyio.abc

from panels.host.delivery.tickets import Tickets
from panels.host.turns.life import live
from panels.host.turns.panel import PanelRunner
from panels.host.turns.restart import Failure, GiveUp, RestartPolicy, decide
from panels.host.turns.states import PanelState
from panels.hostdb.catalogue import PanelFailed, PanelGivenUp, PanelRestarting
from peerbus import BusGoneError
from runtime.errors import ConfigError, InstanceError, MnemaraError, PolicyError, StoreCorruptError
from runtime.turn.driver import ToolSpec

# Errors that name a file or state only the user can repair: restarting cannot help (a bus
# file that is gone or read-only stops the panel's bus work once, with its message).
PERMANENT = (StoreCorruptError, PolicyError, ConfigError, InstanceError, BusGoneError)


def leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for e in exc.exceptions for leaf in leaves(e)]
    return [exc]


def describe(exc: BaseException) -> str:
    """The error as a person reads it: our own errors by their message (they name the file
    and what to do), anything else with its type."""
    parts = []
    for leaf in leaves(exc):
        parts.append(
            str(leaf) if isinstance(leaf, MnemaraError) else f"{type(leaf).__name__}: {leaf}"
        )
    return "; ".join(parts)


def is_permanent(exc: BaseException) -> bool:
    return any(isinstance(leaf, PERMANENT) for leaf in leaves(exc))


async def supervise(
    runner: PanelRunner,
    tools: Sequence[ToolSpec],
    policy: RestartPolicy,
    tickets: Tickets,
    *,
    task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
) -> None:
    host = runner.host
    failures: list[Failure] = []
    reported = False

    def ready() -> None:
        nonlocal reported
        if not reported:
            reported = True
            task_status.started()

    while not runner.stopping:
        started = host.clock()
        try:
            async with anyio.create_task_group() as tg:
                await tg.start(live, runner, tools, tickets)
                ready()
            return  # the life returned: the host is stopping
        except Exception as exc:
            failure = Failure(
                host.clock(),
                host.clock() - started,
                describe(exc),
                permanent=is_permanent(exc),
                messages=runner.failed_turn_ids,
            )
        runner.failed_turn_ids = frozenset()
        failures.append(failure)
        ready()
        host.log.emit(PanelFailed(panel=runner.name, error=failure.error,
                                  ran_for=round(failure.ran_for, 3), failures=len(failures),
                                  permanent=failure.permanent))  # fmt: skip
        runner.set_state(PanelState.FAILED, failure.error)
        # A poison message's failures are forgiven once it is dead-lettered (poison.py).
        verdict = decide(policy, failures, host.clock(), runner.poisoned)
        if isinstance(verdict, GiveUp):
            host.log.emit(PanelGivenUp(panel=runner.name, reason=verdict.reason))
            runner.set_state(PanelState.FAILED, f"given up: {verdict.reason}")
            return
        host.log.emit(PanelRestarting(panel=runner.name, delay=verdict.delay,
                                      streak=verdict.streak))  # fmt: skip
        with anyio.move_on_after(verdict.delay):
            while not runner.stopping:
                await runner.wakeup.event.wait()
