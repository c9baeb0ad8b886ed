"""Applying viewers' commands and the watchdog's actions: checked, carried out, recorded.

`serve_control` reads the control table's pending rows in id order whenever another process
commits to host.sqlite (or the host pokes it), applies each with `apply_command`, and marks
it done or failed with an outcome. A bad command never raises: an unknown panel, a missing
argument or an answer to a question nobody asks is a failed command with a reason.
`watchdog_action` is the host side of the watchdog panel's tools: the target must be another
panel of the team, and every action is written to the event log with its actor and reason.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING

import anyio
import anyio.abc

from panels.host.delivery import OPERATOR, operator_route
from panels.host.wakeup import Wakeup
from panels.hostdb import Command
from panels.watchdog import ActionRefusedError
from peerbus import PeerbusError
from runtime.guard.records import HaltRecord
from runtime.policy.approver import Answer

if TYPE_CHECKING:
    from panels.host.host import Host

_ANSWERS = {"yes": Answer.YES, "session": Answer.SESSION, "always": Answer.ALWAYS}


def operator_halt(reason: str, by: str) -> HaltRecord:
    return HaltRecord(
        source="sentinel",
        rule=f"{by}_halt",
        message=reason or f"halted by the {by}",
        turn=0,
        at=datetime.now(UTC),
    )


async def apply_command(host: Host, cmd: Command) -> tuple[bool, str]:
    verb, args = cmd.verb, cmd.args
    if verb == "shutdown":
        host.request_stop()
        return True, "stopping"
    if verb in ("approve", "deny"):
        return _answer(host, cmd)
    if cmd.panel is None or cmd.panel not in host.services.panels:
        return False, f"no panel {cmd.panel!r} in team {host.team.name}"
    runner = host.services.panels[cmd.panel]
    if verb == "input":
        text = args.get("text")
        if not isinstance(text, str) or not text.strip():
            return False, "input needs text"
        try:
            ident = await host.services.bus.submit(
                OPERATOR, operator_route(runner.name), {"type": "input", "text": text}
            )
        except PeerbusError as exc:
            return False, str(exc)
        return True, f"queued as message {ident}"
    if verb == "pause":
        runner.pause(str(args.get("reason", "")))
        return True, "paused (after the turn in flight, if any)"
    if verb == "resume":
        runner.resume()
        return True, "resumed"
    if verb == "halt":
        runner.halt_now(operator_halt(str(args.get("reason", "")), "operator"), by="operator")
        return True, "halted"
    if verb == "model":
        model = args.get("model")
        if not isinstance(model, str) or not model:
            return False, "model needs a model id"
        runner.set_model(model)
        return True, f"model is {model} from the next turn"
    if verb == "tokens":
        return await _tokens(host, cmd)
    if verb == "inbox":
        runner.set_inbox(bool(args.get("on", True)))
        return True, f"inbox {'on' if runner.inbox_on else 'off'}"
    return False, f"unknown verb {verb!r}"


def _answer(host: Host, cmd: Command) -> tuple[bool, str]:
    approvals = host.services.approvals
    request = cmd.args.get("request")
    if request is None:
        open_ids = approvals.pending(cmd.panel)
        if len(open_ids) != 1:
            return False, f"{len(open_ids)} open questions; name one with --request"
        request = open_ids[0]
    if not isinstance(request, int):
        return False, "request must be a number"
    if cmd.verb == "deny":
        answer = Answer.NO
    else:
        answer = _ANSWERS.get(str(cmd.args.get("answer", "yes")), Answer.YES)
    if not approvals.answer(request, answer):
        return False, f"no open question {request} (answered, timed out or never asked)"
    return True, f"request {request}: {answer.value}"


async def _tokens(host: Host, cmd: Command) -> tuple[bool, str]:
    runner = host.services.panels[str(cmd.panel)]
    value = cmd.args.get("max_window_tokens")
    if not isinstance(value, int) or value < 1_000:
        return False, "tokens needs max_window_tokens >= 1000"
    if runner.session is None:
        return False, "the panel is not running"
    runner.session.config = runner.session.config.model_copy(update={"max_window_tokens": value})
    host.services.log.emit("tokens", runner.name, max_window_tokens=value)
    return True, f"max_window_tokens is {value}"


async def serve_control(
    host: Host,
    poke: Wakeup,
    *,
    task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
) -> None:
    task_status.started()
    db, log = host.db, host.services.log
    while True:
        poked = poke.event
        for cmd in await db.pending_commands():
            ok, outcome = await apply_command(host, cmd)
            await db.finish_command(cmd.id, ok=ok, outcome=outcome)
            log.emit("command", cmd.panel, id=cmd.id, verb=cmd.verb, args=cmd.args, ok=ok,
                     outcome=outcome)  # fmt: skip
        async with anyio.create_task_group() as tg:

            async def on_poke(poked: anyio.Event = poked) -> None:
                await poked.wait()
                tg.cancel_scope.cancel()

            async def on_change() -> None:
                await db.wait_for_change(5.0)
                tg.cancel_scope.cancel()

            tg.start_soon(on_poke)
            tg.start_soon(on_change)


async def watchdog_action(host: Host, actor: str, verb: str, target: str, text: str) -> str:
    panels = host.services.panels
    if target not in panels:
        raise ActionRefusedError(f"no panel {target!r}; the team has {', '.join(panels)}")
    if target == actor:
        raise ActionRefusedError("a watchdog does not act on itself")
    runner = panels[target]
    if verb == "halt":
        runner.halt_now(operator_halt(text, "watchdog"), by=actor)
        outcome = f"{target} is halted; its inbox is kept"
    elif verb == "pause":
        runner.pause(text)
        outcome = f"{target} is paused"
    elif verb == "resume":
        runner.resume()
        outcome = f"{target} is resumed"
    elif verb == "nudge":
        ident = await host.services.bus.submit(actor, target, {"type": "nudge", "text": text})
        outcome = f"nudge sent to {target} as message {ident}"
    else:
        raise ActionRefusedError(f"unknown action {verb!r}")
    host.services.log.emit("watchdog_action", target, actor=actor, verb=verb, text=text,
                           outcome=outcome)  # fmt: skip
    return outcome
