"""The bus's change counter, and waiting for it to move (the host's `wait_for_change`).

`generation` goes up on every change this process makes through the Bus (`bump`) and on
every change `refresh` notices from other processes (file signatures, and PRAGMA
data_version every `backstop_interval`). A waiter on a busy bus polls in the event loop;
on a quiet one it parks in a worker thread on inotify (see watch.py), woken through a
pipe by in-process changes.
"""

from __future__ import annotations

import contextlib
import functools
import os
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio

from peerbus.model import BusOptions
from peerbus.watch import Signature, file_signature, watch_files

# How long after the last change the waiter keeps polling in the event loop before it
# parks in a thread on inotify.
HOT = 1.0


class ChangeWaiter:
    """The change counter of one Bus; all its methods run on the event loop."""

    def __init__(
        self,
        paths: tuple[Path, ...],
        options: BusOptions,
        read_versions: Callable[[], Awaitable[Signature]],
    ) -> None:
        self._paths = paths
        self._options = options
        self._read_versions = read_versions
        self._signature: Signature = file_signature(paths)
        self._versions: Signature | None = None
        self._backstop_at = 0.0
        self.generation = 0
        # Write ends of the pipes that watcher threads wait on: poked on in-process changes.
        self._wakers: set[int] = set()
        self._woke_at = 0.0
        self._changed = anyio.Event()
        self._changed_at = 0.0

    def bump(self) -> None:
        """Record a change and wake every waiter, in the loop and in watcher threads."""
        self.generation += 1
        self._changed_at = anyio.current_time()
        changed, self._changed = self._changed, anyio.Event()
        changed.set()
        for fd in list(self._wakers):
            with contextlib.suppress(BlockingIOError, OSError):
                os.write(fd, b"!")

    async def refresh(self) -> int:
        """Notice changes from other connections; returns the generation."""
        signature = file_signature(self._paths)
        if signature != self._signature:
            self._signature = signature
            self.bump()
            return self.generation
        now = anyio.current_time()
        if now - self._backstop_at >= self._options.backstop_interval:
            self._backstop_at = now
            versions = await self._read_versions()
            if self._versions is not None and versions != self._versions:
                self.bump()
            self._versions = versions
        return self.generation

    async def wait_past(self, since: int) -> None:
        """Return once the generation is above `since`; cancel it to stop waiting."""
        while True:
            if await self.refresh() > since:
                return
            if anyio.current_time() - self._changed_at < HOT:
                # Busy bus: a stat per poll in the event loop is the cheapest way to keep
                # up (a thread per wait cost more, and p99 went 15 -> 60 ms).
                with anyio.move_on_after(self._options.poll_interval):
                    await self._changed.wait()
            else:
                await self._park()  # quiet bus: block without burning CPU

    async def _park(self) -> None:
        """Block in a worker thread until the files change, an in-process change, or the
        backstop is due."""
        read_end, write_end = os.pipe()
        os.set_blocking(write_end, False)
        self._wakers.add(write_end)
        try:
            await anyio.to_thread.run_sync(
                functools.partial(
                    _watch_then_close,
                    self._paths,
                    self._signature,
                    poll=self._options.poll_interval,
                    budget=self._options.backstop_interval,
                    wake=read_end,
                    not_before=self._woke_at + self._options.poll_interval,
                ),
                abandon_on_cancel=True,
            )
            self._woke_at = time.monotonic()
        finally:
            # Closing the write end makes the read end readable (EOF), so a thread left
            # behind by a cancelled (timed-out) wait returns at once and closes its end.
            self._wakers.discard(write_end)
            os.close(write_end)


def _watch_then_close(
    paths: tuple[Path, ...],
    signature: Signature,
    *,
    poll: float,
    budget: float,
    wake: int,
    not_before: float,
) -> bool:
    try:
        return watch_files(
            paths, signature, poll=poll, budget=budget, wake=wake, not_before=not_before
        )
    finally:
        os.close(wake)
