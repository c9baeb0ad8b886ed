"""One turn printed straight off a session, without a host: `mnemara rehearse --prompt`.

The session's events are shown by the same `EventView` as the solo face's, so both look
alike; the interactive REPL itself runs under the host (face.py).
"""

from __future__ import annotations

import signal

import anyio

from panels.host.turns.turn import preview
from panels.hostdb import HostEvent
from panels.hostdb import catalogue as ev
from panels.repl.show import EventView
from panels.repl.terminal import Terminal
from runtime.errors import MnemaraError
from runtime.guard.halts import Halted
from runtime.turn.driver import TextDelta, ToolCall, ToolResult
from runtime.turn.events import RoleWarning, Trimmed
from runtime.turn.session import Session


def as_event(event: object) -> HostEvent | None:
    """A session event as the host would emit it; None for the unshown."""
    if isinstance(event, TextDelta):
        return ev.TextDelta(text=event.text)
    if isinstance(event, ToolCall):
        return ev.ToolCalled(id=event.id, tool=event.name, input=preview(event.input, 400))
    if isinstance(event, ToolResult):
        return ev.ToolAnswered(id=event.tool_use_id, error=event.is_error, content=event.content)
    if isinstance(event, RoleWarning):
        return ev.Warned(message=event.message)
    if isinstance(event, Trimmed):
        return ev.WindowTrimmed(evicted=event.evicted, forced=event.forced)
    if isinstance(event, Halted):
        r = event.record
        return ev.Halted(by=r.source, source=r.source, rule=r.rule, message=r.message, turn=r.turn)
    return None


async def run_turn(session: Session, terminal: Terminal, text: str) -> None:
    """Run one turn, printing as it streams; Ctrl-C stops it. A driver error is raised."""
    view = EventView(
        terminal, session.config.display_name or "assistant", stream=session.config.stream
    )
    failure: MnemaraError | None = None
    outcome = "done"
    async with anyio.create_task_group() as tg:
        turn_scope = anyio.CancelScope()

        async def on_sigint() -> None:
            with anyio.open_signal_receiver(signal.SIGINT) as signals:
                async for _ in signals:
                    turn_scope.cancel()

        tg.start_soon(on_sigint)
        try:
            with turn_scope:
                async for event in session.turn(text):
                    shown = as_event(event)
                    if shown is not None:
                        view.show(shown)
            if turn_scope.cancelled_caught:
                outcome = "stopped"
        except MnemaraError as exc:
            failure = exc  # raised below, outside the task group, not wrapped in a group
        finally:
            tg.cancel_scope.cancel()
    view.show(ev.TurnEnded(turn=0, outcome=outcome, error=None, tool_calls=0, input_tokens=0,
                           output_tokens=0, usd=0.0))  # fmt: skip
    if failure is not None:
        raise failure
