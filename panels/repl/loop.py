"""One turn printed straight off a session, without a host: `mnemara rehearse --prompt`.

The session's events are shown by the same `EventView` as the solo face's, so both look
alike; the interactive REPL itself runs under the host (face.py).
"""

from __future__ import annotations

import signal
from typing import Any

import anyio

from panels.host.turn import preview
from panels.repl.show import EventView
from panels.repl.terminal import Terminal
from runtime.driver import TextDelta, ToolCall, ToolResult
from runtime.errors import MnemaraError
from runtime.guard.halts import Halted
from runtime.session import RoleWarning, Session, Trimmed


def as_event(event: object) -> tuple[str, dict[str, Any]] | None:
    """A session event as the host would emit it (kind, data); None for the unshown."""
    if isinstance(event, TextDelta):
        return "text_delta", {"text": event.text}
    if isinstance(event, ToolCall):
        return "tool_call", {"tool": event.name, "input": preview(event.input, 400)}
    if isinstance(event, ToolResult):
        return "tool_result", {"error": event.is_error, "content": event.content}
    if isinstance(event, RoleWarning):
        return "warning", {"message": event.message}
    if isinstance(event, Trimmed):
        return "trimmed", {"evicted": list(event.evicted), "forced": list(event.forced)}
    if isinstance(event, Halted):
        return "halt", event.record.as_dict()
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
                        view.show(*shown)
            if turn_scope.cancelled_caught:
                outcome = "stopped"
        except MnemaraError as exc:
            failure = exc  # raised below, outside the task group, not wrapped in a group
        finally:
            tg.cancel_scope.cancel()
    view.show("turn_ended", {"outcome": outcome})
    if failure is not None:
        raise failure
