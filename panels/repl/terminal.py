"""The REPL's terminal: one thread reads stdin lines; lines are routed to whoever waits.

While idle the loop reads the next line. While a turn runs, a watcher reads on its behalf:
`/stop` stops the turn, an answer goes to a pending approval question, anything else is
queued for after the turn. stdin is read in a worker thread because a blocking `input()`
cannot be cancelled; the thread is abandoned on exit.
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
        async with self._send:
            while True:
                try:
                    line = await anyio.to_thread.run_sync(self._read_line, abandon_on_cancel=True)
                except (OSError, ValueError):
                    return
                if not line:
                    return
                await self._send.send(line.rstrip("\n"))

    def write(self, text: str) -> None:
        self.out.write(text)
        self.out.flush()

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
        if self._save_history:
            import readline

            readline.add_history(line)
            self._save_history()
        return line

    async def watch(self, stop: Callable[[], None]) -> None:
        """During a turn: route lines to the approval question, /stop, or the queue."""
        async for line in self._receive:
            if self._answer is not None:
                answer, self._answer = self._answer, None
                await answer.send(line)
            elif line.strip() == "/stop":
                stop()
            elif line.strip():
                self.queued.append(line)
                self.write("(queued until the turn ends; /stop stops it)\n")
        # End of input (a pipe ran dry): let the turn finish; questions now answer "no".
        self.closed = True

    async def ask(self, question: str) -> str | None:
        """Ask during a turn; the watcher hands the next line back. None at end of input."""
        if self.closed:
            return None
        send, receive = anyio.create_memory_object_stream[str](1)
        self._answer = send
        self.write(question)
        try:
            with receive:
                return await receive.receive()
        except anyio.EndOfStream:
            return None
        finally:
            self._answer = None
