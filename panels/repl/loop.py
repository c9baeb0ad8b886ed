"""The solo line REPL: read a line, run a command or a turn, print what happens."""

from __future__ import annotations

import signal

import anyio

from panels.repl import commands
from panels.repl.slash import SlashError, parse
from panels.repl.terminal import Terminal, safe
from runtime.driver import (
    AgentDriver,
    Cost,
    TextDelta,
    ToolCall,
    ToolResult,
    Usage,
)
from runtime.errors import DriverError, MnemaraError
from runtime.halts import Halted
from runtime.session import RoleWarning, Session, Trimmed, open_session

PROMPT = "you> "


def _preview(text: str, limit: int = 300) -> str:
    flat = " ".join(safe(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


async def run_turn(session: Session, terminal: Terminal, text: str) -> None:
    """Run one turn, printing as it streams; /stop or Ctrl-C cancels it."""
    name = session.config.display_name or "assistant"
    stream = session.config.stream
    buffered: list[str] = []
    at_line_start = True

    async def drive(scope: anyio.CancelScope) -> None:
        nonlocal at_line_start
        with scope:
            async for event in session.turn(text):
                if isinstance(event, TextDelta):
                    if at_line_start:
                        terminal.write(f"{name}: ")
                        at_line_start = False
                    if stream:
                        terminal.write(safe(event.text))
                    else:
                        buffered.append(event.text)
                elif isinstance(event, ToolCall):
                    terminal.write(f"\n> tool: {event.name}({_preview(str(event.input), 160)})\n")
                    at_line_start = True
                elif isinstance(event, ToolResult):
                    flag = "error" if event.is_error else "result"
                    terminal.write(f"  {flag}: {_preview(event.content)}\n")
                elif isinstance(event, RoleWarning):
                    terminal.write(f"[warning] {event.message}\n")
                elif isinstance(event, Trimmed):
                    forced = f", {len(event.forced)} pinned forced" if event.forced else ""
                    terminal.write(f"[window trimmed: {len(event.evicted)} rows{forced}]\n")
                elif isinstance(event, Halted):
                    terminal.write(f"\n{safe(event.record.notice())}\n/resume lets it go on.\n")
                    at_line_start = True
                elif isinstance(event, Usage | Cost):
                    pass
        if scope.cancelled_caught:
            terminal.write("\n[stopped]\n")

    async with anyio.create_task_group() as tg:
        turn_scope = anyio.CancelScope()

        def stop() -> None:
            turn_scope.cancel()

        async def on_sigint() -> None:
            with anyio.open_signal_receiver(signal.SIGINT) as signals:
                async for _ in signals:
                    stop()

        tg.start_soon(terminal.watch, stop)
        tg.start_soon(on_sigint)
        failure: MnemaraError | None = None
        try:
            await drive(turn_scope)
        except MnemaraError as exc:
            failure = exc  # raised below, outside the task group, not wrapped in a group
        finally:
            tg.cancel_scope.cancel()
    if failure is not None:
        raise failure
    if buffered:
        terminal.write(safe("".join(buffered)))
    if not at_line_start or buffered:
        terminal.write("\n")


async def repl(session: Session, terminal: Terminal) -> None:
    terminal.write(
        f"mnemara: {session.paths.name}  model={session.config.model}  "
        f"role={session.config.role_doc_path or '(none)'}\n/help lists commands; /quit leaves.\n"
    )
    while True:
        line = await terminal.read(PROMPT)
        if line is None:
            terminal.write("\n")
            return
        if not line.strip():
            continue
        try:
            if line.lstrip().startswith("/"):
                output = await commands.dispatch(session, parse(line))
                if output is None:
                    return
                terminal.write(output + "\n")
            else:
                await run_turn(session, terminal, line)
        except DriverError as exc:
            terminal.write(f"\n[error] {exc}\n")
        except (MnemaraError, SlashError) as exc:
            terminal.write(f"[error] {exc}\n")


async def run_solo_repl(instance: str, *, driver: AgentDriver) -> None:
    """The solo REPL on an instance: policy questions are asked on the terminal."""
    from panels.repl.approve import ReplAsker
    from runtime.home import InstancePaths

    terminal = Terminal(history=InstancePaths.for_name(instance).prompt_history)
    async with anyio.create_task_group() as tg:
        await tg.start(terminal.serve)
        async with open_session(instance, driver=driver, asker=ReplAsker(terminal)) as session:
            await repl(session, terminal)
        tg.cancel_scope.cancel()
