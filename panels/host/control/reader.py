"""The control table's reader: verbs written by other processes reach the dispatcher here.

`serve_control` reads the pending rows in id order whenever host.sqlite changes (the bus's
change waiter: a command is noticed within milliseconds, not at the next poll), parses each
with the verb catalogue, applies it with the one dispatcher (dispatch.py) and marks it done
or failed with the outcome. A row that is not a valid verb is failed with the reason, never
guessed at. Window verbs wait for the panel's turn to end, so they run in tasks of their own
and the verbs behind them (a halt) are not held up.
"""

from __future__ import annotations

import anyio
import anyio.abc

from panels.host.control.dispatch import Dispatcher
from panels.hostdb import Command, HostDb, VerbError, parse_verb
from panels.hostdb.catalogue import VerbApplied
from panels.hostdb.verbs import Verb

# A quiet control table is still read this often (a missed wake-up costs at most this).
RECHECK = 5.0


async def serve_control(
    db: HostDb,
    dispatcher: Dispatcher,
    *,
    task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
) -> None:
    taken: set[int] = set()  # window verbs being applied (still pending in the table)

    async def apply(cmd: Command, verb: Verb) -> None:
        try:
            # Answered by the dispatcher, with the event that reports it, in one transaction.
            await dispatcher.apply(verb, by=cmd.by, command_id=cmd.id)
        except Exception as exc:  # a verb never takes the control loop down
            text = f"the host could not apply it ({type(exc).__name__}: {exc})"
            await db.finish_command(cmd.id, ok=False, outcome=text)
        finally:
            taken.discard(cmd.id)

    async with anyio.create_task_group() as tg:
        task_status.started()
        while True:
            since = await db.generation()
            for cmd in await db.pending_commands():
                if cmd.id in taken:
                    continue
                try:
                    verb = parse_verb(cmd.verb, cmd.panel, cmd.args)
                except VerbError as exc:
                    await db.finish_command(cmd.id, ok=False, outcome=str(exc))
                    dispatcher.services.log.emit(
                        VerbApplied(panel=cmd.panel, id=cmd.id, verb=cmd.verb, by=cmd.by,
                                    summary="", ok=False, outcome=str(exc))
                    )  # fmt: skip
                    continue
                if verb.window:
                    taken.add(cmd.id)
                    tg.start_soon(apply, cmd, verb)
                else:
                    await apply(cmd, verb)
            await db.wait_for_change(RECHECK, since=since)
