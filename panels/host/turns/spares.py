"""A panel's warm spare, from the host's side: when to have one built, and when to kill it.

When a panel's life has nothing to deliver (right after a turn, or idle since it started),
it asks its driver for a spare shaped like its next turn (`warm`): the session's
`spare_request`, read now, as the turn would read it. The driver keeps one only within the
host's limit (`[team] warm_spares`), for the panels expected to turn soonest (their due:
the last turn's end plus the panel's usual gap between turns; runtime/claude/pool.py). A
panel refused at the limit is woken when a place is freed (a spare taken by its turn), so
it asks again at once. Each wake of an idle panel asks again, so a spare built from a role
doc, config or model that has changed since is replaced; the turn checks once more when it
starts (runtime/claude/spare.py). A panel that may not turn (paused, halted, stopping) and
a life that ends, however it ends, kill theirs (`cool`).
"""

from __future__ import annotations

import anyio

from panels.host.turns.panel import PanelRunner
from runtime.turn.driver import AgentDriver, WarmDriver
from runtime.turn.session import Session

COOL_TIMEOUT_S = 15.0  # a spare's end is bounded by the SDK's own timers; this is a backstop


async def warm(runner: PanelRunner, session: Session, driver: AgentDriver) -> None:
    """Have a spare ready for the panel's next turn, if its driver keeps them."""
    if not isinstance(driver, WarmDriver):
        return
    request = None if runner.blocked() else session.spare_request()
    if request is None:
        await driver.discard_spare()
        return
    await driver.prepare(request, due=runner.next_turn_due(), wake=runner.wakeup.set)


async def cool(driver: AgentDriver) -> None:
    """Kill the panel's spare, if any; safe on a cancelled or failing life."""
    if not isinstance(driver, WarmDriver):
        return
    with anyio.CancelScope(shield=True), anyio.move_on_after(COOL_TIMEOUT_S):
        await driver.discard_spare()
