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

from panels.host.life import live
from panels.host.panel import PanelRunner
from panels.host.restart import Failure, GiveUp, RestartPolicy, decide
from panels.host.states import PanelState
from runtime.driver import ToolSpec


def describe(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(describe(e) for e in exc.exceptions)
    return f"{type(exc).__name__}: {exc}"


async def supervise(
    runner: PanelRunner,
    tools: Sequence[ToolSpec],
    policy: RestartPolicy,
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
                await tg.start(live, runner, tools)
                ready()
            return  # the life returned: the host is stopping
        except Exception as exc:
            failure = Failure(host.clock(), host.clock() - started, describe(exc))
        failures.append(failure)
        ready()
        host.log.emit("panel_failed", runner.name, error=failure.error,
                      ran_for=round(failure.ran_for, 3), failures=len(failures))  # fmt: skip
        runner.set_state(PanelState.FAILED, failure.error)
        verdict = decide(policy, failures, host.clock())
        if isinstance(verdict, GiveUp):
            host.log.emit("panel_given_up", runner.name, reason=verdict.reason)
            runner.set_state(PanelState.FAILED, f"given up: {verdict.reason}")
            return
        host.log.emit("panel_restarting", runner.name, delay=verdict.delay, streak=verdict.streak)
        with anyio.move_on_after(verdict.delay):
            while not runner.stopping:
                await runner.wakeup.event.wait()
