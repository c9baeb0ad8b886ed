"""`open_session`: an instance's session with its store, memory and guard, ready for turns
(runtime/turn/session.py); the store is closed when the block ends."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path

from runtime.guard import halts
from runtime.guard.guard import Guard
from runtime.guard.policy import build_policy, containment_for
from runtime.guard.world import GitProbe, git_state
from runtime.instance.config import load_config
from runtime.instance.debuglog import DebugLog
from runtime.instance.home import InstancePaths
from runtime.memory import open_memory
from runtime.policy.asking import Asker
from runtime.store import open_turn_store
from runtime.turn.driver import AgentDriver, Approver, ToolSpec
from runtime.turn.session import Session

# How long settled delivery state (acked ids, published sends) is kept: long enough that a
# bus message redelivered after a host was down for days is still recognised as consumed.
DELIVERY_RETENTION = 7 * 24 * 3600.0


@asynccontextmanager
async def open_session(
    instance: str,
    *,
    driver: AgentDriver,
    approver: Approver | None = None,
    asker: Asker | None = None,
    home: Path | None = None,
    cwd: Path | None = None,
    tools: Sequence[ToolSpec] = (),
    git_probe: GitProbe = git_state,
    guard: Guard | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> AsyncIterator[Session]:
    """Open an instance's session; the store is closed when the block ends.

    Tool calls are decided by the panel's guard (runtime/guard/guard.py): `guard` when the owner
    keeps one across sessions (a host), else one built from the instance's config. Its policy is
    `approver`, or else the instance's permission policy, whose `ask` verdicts go to `asker`
    (none: denied, with a message the model can read). `tools` are served next to the agent's
    own; `git_probe` measures the git state the sentinel compares; `clock` times the pauses
    between turns that choose the prompt cache's lifetime (runtime/turn/cache_ttl.py).
    """
    paths = InstancePaths.for_name(instance, home).require()
    config = load_config(paths.config)
    cwd = cwd or Path.cwd()
    if approver is None:
        contained = containment_for(driver, cwd)
        approver = build_policy(paths, config, cwd=cwd, asker=asker, containment=contained)
    async with AsyncExitStack() as stack:
        store = await stack.enter_async_context(open_turn_store(paths.turns))
        memory = stack.enter_context(open_memory(paths, config, DebugLog(paths.debug_log)))
        recovered = await store.recover_interrupted()
        await store.prune_delivery(older_than=DELIVERY_RETENTION)
        session = Session(
            paths=paths,
            config=config,
            store=store,
            driver=driver,
            approver=approver,
            cwd=cwd,
            tools=tools,
            git_probe=git_probe,
            guard=guard,
            memory=memory,
            clock=clock,
        )
        if recovered:
            session.debug.write("warning", "interrupted_turns_recovered", row_ids=recovered)
        if config.unknown_fields():
            session.debug.write("warning", "unknown_config_fields", fields=config.unknown_fields())
        # The spend `mnemara show` prints is this session's (a host's guard: this host run's).
        await halts.save_spend(store, session.guard.spend())
        if guard is None and await store.get_meta(halts.HALT_META):
            # A session of its own has fresh budgets and a fresh sentinel: opening one is the
            # operator going on. (A guard the owner keeps carries its halt over.) The record
            # stays in debug.log; the meta key only names a current halt.
            await halts.clear_halt(store, session.debug, None)
        try:
            yield session
        finally:
            # A guard the owner keeps outlives this session: it must not log through it.
            session.guard.on_record.remove(session._log_record)
            session.close()  # the working tree's watch ends with the session
