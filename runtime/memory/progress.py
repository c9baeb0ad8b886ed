"""A one-line progress bar for long memory work (indexing, replay), drawn only on a terminal.

`progress_bar(total, label)` returns a `Progress` callable: `bar(done, total)`. On a TTY it
redraws one line in place (carriage return; bar, percent, count, rate), at most ten times a
second, and ends the line when `done` reaches `total` or at `close()`. Anywhere else (a pipe,
a log file, a test) it writes nothing, so output stays clean for `--json` and for logs.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

WIDTH = 24
REDRAW_SECONDS = 0.1


class ProgressBar:
    def __init__(self, total: int, label: str, stream: TextIO) -> None:
        self.total = total
        self.label = label
        self.stream = stream
        self.shown = _is_tty(stream)
        self._started = time.monotonic()
        self._drawn_at = 0.0
        self._ended = False

    def __call__(self, done: int, total: int) -> None:
        if not self.shown or self._ended:
            return
        self.total = total or self.total
        now = time.monotonic()
        finished = done >= self.total
        if not finished and now - self._drawn_at < REDRAW_SECONDS:
            return
        self._drawn_at = now
        self.stream.write("\r" + render(self.label, done, self.total, now - self._started))
        if finished:
            self.stream.write("\n")
            self._ended = True
        self.stream.flush()

    def close(self) -> None:
        """End the line if the work stopped short of `total` (an error, a cancel)."""
        if self.shown and not self._ended and self._drawn_at:
            self.stream.write("\n")
            self.stream.flush()
        self._ended = True


def render(label: str, done: int, total: int, seconds: float) -> str:
    """`label [#####.....]  42%  420/1000  35.0/s`: the line a bar draws (pure, for tests)."""
    share = min(1.0, done / total) if total > 0 else 1.0
    filled = round(share * WIDTH)
    rate = done / seconds if seconds > 0 else 0.0
    bar = "#" * filled + "." * (WIDTH - filled)
    return f"{label} [{bar}] {share:4.0%}  {done}/{total}  {rate:.1f}/s"


def progress_bar(total: int, label: str, stream: TextIO | None = None) -> ProgressBar:
    """A bar on `stream` (stderr by default) when it is a terminal, silent otherwise."""
    return ProgressBar(total, label, sys.stderr if stream is None else stream)


def _is_tty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # a closed or stream-like object without a terminal
        return False
