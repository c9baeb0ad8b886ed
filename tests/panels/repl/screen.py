"""Driving the solo face in tests: a captured screen and typed lines that wait for it."""

from __future__ import annotations

import io
import threading
from collections.abc import Callable
from pathlib import Path

import anyio

from panels.host.solo import solo_team
from panels.repl.face import run_face
from panels.repl.terminal import Terminal
from runtime.turn.driver import AgentDriver


class Screen(io.StringIO):
    """Captures output and lets the input feeder wait until something is on screen."""

    def __init__(self) -> None:
        super().__init__()
        self.asked = threading.Event()
        self.changed = threading.Condition()

    def write(self, text: str) -> int:
        if "allow? " in text:
            self.asked.set()
        with self.changed:
            written = super().write(text)
            self.changed.notify_all()
        return written

    def wait_for(self, text: str, timeout: float = 30) -> None:
        with self.changed:
            self.changed.wait_for(lambda: text in self.getvalue(), timeout=timeout)


def feeder(lines: list[str], screen: Screen) -> Callable[[], str]:
    """Lines for the REPL; a line starting with '?' is typed only once a question shows,
    one of the form '@TEXT@LINE' only once TEXT is on screen."""
    pending = list(lines)

    def read_line() -> str:
        if not pending:
            return ""
        line = pending.pop(0)
        if line.startswith("?"):
            screen.asked.wait(timeout=30)
            screen.asked.clear()
            line = line[1:]
        elif line.startswith("@"):
            wanted, line = line[1:].split("@", 1)
            screen.wait_for(wanted)
        return line + "\n"

    return read_line


async def drive_repl(
    lines: list[str], driver: AgentDriver, cwd: Path, instance: str = "solo"
) -> str:
    """The face over a real host (trio or asyncio), the panel's model scripted."""
    screen = Screen()
    terminal = Terminal(out=screen, read_line=feeder(lines, screen))
    with anyio.fail_after(60):
        await run_face(solo_team(instance, cwd=cwd), terminal, drivers=lambda spec: driver)
    return screen.getvalue()
