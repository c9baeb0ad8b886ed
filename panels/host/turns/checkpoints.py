"""The host's side of checkpoints: one before each turn that may write, and the rewind
verb. Which areas and when: panels/host/turns/checkpointer.py; the store: runtime/checkpoint/.

When a checkpoint fails (git missing half way, a full disk, an area that vanished), the
event log says so once, and again only after a checkpoint has worked since; the turn runs,
and a rewind cannot go back to before it. Why not fail closed by default: a checkpoint is
an undo aid, not a wall (the sandbox and the lane are), and a full disk under MNEMARA_HOME
should not stop a team. `[team.checkpoints] required = true` fails closed instead: the panel
halts before the turn, its messages go back uncounted, and `resume` lets it try again.

A rewind holds every panel of the team between turns (they share the working directory),
restores, and appends a row to the panel's window saying what changed, so the agent knows
at its next turn.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import AsyncExitStack
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import anyio
import anyio.to_thread

from panels.host.services import HostServices
from panels.host.turns.checkpointer import Checkpointer, make_checkpointer, may_write
from panels.hostdb.catalogue import CheckpointTaken, Warned
from panels.team import PanelSpec
from runtime.checkpoint import RewindReport
from runtime.errors import CheckpointError, PanelHaltedError
from runtime.guard.records import HaltRecord
from runtime.turn.prompt import text_block
from runtime.window.rows import NewRow, estimate_tokens

if TYPE_CHECKING:
    from panels.host.turns.panel import PanelRunner
    from runtime.turn.session import Session

NOTE_CHARS = 120  # of the turn's input, kept as the checkpoint's note


def checkpointer_for(services: HostServices, spec: PanelSpec) -> Checkpointer:
    """The panel's checkpointer, made on first use and kept for the host's life."""
    found = services.checkpointers.get(spec.name)
    if found is None:
        found = make_checkpointer(services.team, spec, services.home)
        services.checkpointers[spec.name] = found
    return found


async def before_turn(runner: PanelRunner, session: Session, turn: int, text: str) -> None:
    """Checkpoint the panel's areas before its turn `turn`, if it may write. A failure is a
    warning; with `required`, the panel halts here (PanelHaltedError: the turn is refused
    and its messages go back)."""
    settings = runner.host.team.checkpoints
    if not settings.enabled or not may_write(session.config):
        return
    log = runner.host.log
    keeper = checkpointer_for(runner.host, runner.spec)
    note = " ".join(text.split())[:NOTE_CHARS]
    try:
        taken = await anyio.to_thread.run_sync(keeper.take, turn, note)
    except (CheckpointError, OSError) as exc:
        if not keeper.failing:
            keeper.failing = True
            what = (
                "the panel halts until it works"
                if settings.required
                else ("this turn runs without one, and a rewind cannot go back to before it")
            )
            log.emit(Warned(panel=runner.name, message=(
                f"checkpoint before turn {turn} failed: {exc}; {what}"
                " (said once, until a checkpoint works again)")))  # fmt: skip
        if settings.required:
            record = HaltRecord(source="team", rule="checkpoint_failed",
                                message=f"no checkpoint before turn {turn}: {exc}",
                                turn=turn, at=datetime.now(UTC))  # fmt: skip
            # Not `runner.halt_now`: that cancels the turn, and this one has not begun.
            runner.halted_by = "host"
            runner.guard.halt_now(record)
            await session.save_halt()
            raise PanelHaltedError(record.message, panel=runner.name, record=record) from None
        return
    keeper.failing = False
    checkpoint = taken.checkpoint
    changed = sum(a.changes.total for a in checkpoint.areas)
    dropped = len(taken.dropped)
    log.emit(CheckpointTaken(panel=runner.name, number=checkpoint.number, turn=turn,
                             changed=changed, ms=checkpoint.ms, dropped=dropped))  # fmt: skip
    for message in keeper.news(taken):
        log.emit(Warned(panel=runner.name, message=message))


async def rewind_panel(
    runner: PanelRunner, panels: Mapping[str, PanelRunner], number: int | None
) -> RewindReport:
    """Restore `runner`'s areas to checkpoint `number` (None: its latest turn's), while no
    panel of the team runs a turn (they share the working directory), and leave a row in its
    window that says what changed."""
    keeper = checkpointer_for(runner.host, runner.spec)
    async with AsyncExitStack() as stack:
        # Every panel held, in one order: only this verb holds more than one at once.
        for name in sorted(panels):
            await stack.enter_async_context(panels[name].exclusive)
        report = await anyio.to_thread.run_sync(keeper.rewind, number)
        await _note_in_window(runner, keeper, report)
    await runner.count_window()
    return report


async def _note_in_window(runner: PanelRunner, keeper: Checkpointer, report: RewindReport) -> None:
    text = report.window_note()
    row = NewRow("system", (text_block(text),), estimate_tokens(text))
    session = runner.session
    if session is not None:
        await session.store.append([row])
        return
    from runtime.store import TurnStore

    def append() -> None:  # no session now (starting, failed): the store file directly
        with TurnStore.open(keeper.paths.turns) as store:
            store.append([row])

    await anyio.to_thread.run_sync(append)
