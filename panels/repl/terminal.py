"""The REPL's terminal: one thread reads stdin lines; lines are routed to whoever waits.

A pending approval question takes the next line first, whatever else waits (the question
can come while the loop is idle: a turn on a peer's message). Otherwise, while idle the loop
reads the next line; while a turn runs, a watcher reads on its behalf: `/stop` stops the
turn, anything else is queued for after the turn. stdin is read in a worker thread because a
blocking `input()` cannot be cancelled; the thread is abandoned on exit.
"""

from __future__ import annotations

import contextlib
import re
import sys
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

import anyio
from anyio.abc import TaskStatus
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

# Terminal control sequences and C0/C1 controls other than newline and tab.
_CONTROL = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b[@-_]|[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def safe(text: str) -> str:
    """Text from a model or a tool, with anything that could drive the terminal removed."""
    return _CONTROL.sub("", text)


def _setup_history(path: Path) -> Callable[[], None]:
    try:
        import readline
    except ImportError:  # pragma: no cover - platforms without readline
        return lambda: None
    with contextlib.suppress(FileNotFoundError, OSError):
        readline.read_history_file(path)
    readline.set_history_length(1000)

    def save() -> None:
        with contextlib.suppress(OSError):
            readline.write_history_file(path)

    return save


class Terminal:
    def __init__(
        self,
        history: Path | None = None,
        out: TextIO | None = None,
        read_line: Callable[[], str] | None = None,
    ) -> None:
        self.out = out or sys.stdout
        self._read_line = read_line or sys.stdin.readline
        self._send: MemoryObjectSendStream[str]
        self._receive: MemoryObjectReceiveStream[str]
        self._send, self._receive = anyio.create_memory_object_stream[str](16)
        self.queued: deque[str] = deque()
        self.at_line_start = True
        self.said = 0  # lines put out by `say`: a streamed text they cut is labelled again
        self.closed = False
        self._answer: MemoryObjectSendStream[str] | None = None
        self._save_history = (
            _setup_history(history)
            if history and read_line is None and sys.stdin.isatty()
            else None
        )

    async def serve(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Read stdin until EOF; run in the REPL's task group."""
        task_status.started()
        try:
            async with self._send:
                while True:
                    try:
                        line = await anyio.to_thread.run_sync(
                            self._read_line, abandon_on_cancel=True
                        )
                    except (OSError, ValueError):
                        return
                    if not line:
                        return
                    if self._answer is not None:
                        answer, self._answer = self._answer, None
                        await answer.send(line.rstrip("\n"))
                    else:
                        await self._send.send(line.rstrip("\n"))
        finally:
            # End of input: a question still open, and every later one, answers "no".
            self.closed = True
            if self._answer is not None:
                self._answer.close()

    def close(self) -> None:
        """Release the line streams (the reading thread, if any, is abandoned)."""
        self._send.close()
        self._receive.close()

    def __enter__(self) -> Terminal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def write(self, text: str) -> None:
        if text:
            self.out.write(text)
            self.out.flush()
            self.at_line_start = text.endswith("\n")

    def say(self, line: str) -> None:
        """Write `line` on a line of its own (ending a partly written line first)."""
        self.said += 1
        self.write(("" if self.at_line_start else "\n") + line + "\n")

    async def read(self, prompt: str = "") -> str | None:
        """The next line for the idle loop (queued lines first); None at end of input."""
        if self.queued:
            return self.queued.popleft()
        if prompt:
            self.write(prompt)
        try:
            line = await self._receive.receive()
        except anyio.EndOfStream:
            return None
        self.at_line_start = True  # on a terminal, the Enter that ended the line
        if self._save_history:
            import readline

            readline.add_history(line)
            self._save_history()
        return line

    async def watch(
        self, stop: Callable[[], object], handle: Callable[[str], bool] | None = None
    ) -> None:
        """During a turn: route lines to /stop, `handle` (True when it took the line; for
        commands that act at once), or the queue."""
        async for line in self._receive:
            if line.strip() == "/stop":
                stop()
            elif handle is not None and handle(line):
                continue
            elif line.strip():
                self.queued.append(line)
                self.say("(queued until the turn ends; /stop stops it)")
        # End of input (a pipe ran dry): let the turn finish; questions now answer "no".

    async def ask(self, question: str) -> str | None:
        """Ask a question; the next line typed is the answer. None at end of input."""
        if self.closed:
            return None
        send, receive = anyio.create_memory_object_stream[str](1)
        self._answer = send
        self.write(question)
        try:
            with send, receive:
                return await receive.receive()
        except anyio.EndOfStream:
            return None
        finally:
            self._answer = None
