"""A database's change counter, and waiting for it to move (`wait_for_change` of the bus
and of host.sqlite).

`generation` goes up on every change this process makes or notices. Each change also says
whom it concerns: one or more recipients (a direct submit, a nack, a retry), or everyone (a
broadcast, or a change whose recipients are unknown: the data_version backstop, a bus
without signals). A waiter for recipient R returns once a change concerning R (or
everyone) came after its reference point; a waiter for no recipient (`bus tail`, the
dashboard) returns on any change, as before.

The recipients are the bus's; host.sqlite has none (every waiter waits for any change).

Where the changes come from:
- in-process: the owner (the Bus, HostDb) calls `bump(recipients)` after its own writes
  (SQLite's data_version never counts a connection's own commits);
- signals (`RecipientSignals`, the bus's peerbus/sqlite/signals.py): one inotify descriptor
  per bus on the signal files of the recipients this process waits for, and the broadcast
  one. Writers touch a recipient's file after their commit, so a commit for S wakes nobody
  waiting for R;
- the database files: waiters for no recipient share an inotify descriptor on the
  directories of the database and -wal files (any commit); without signals (a bus opened
  only to look, or host.sqlite) every waiter uses it;
- `PRAGMA data_version`, the backstop for writers that touch no signal (other tools, the
  original mnemara sharing a table in compatibility mode, a crash between a commit and its
  touch): asked every `backstop_interval` while the files move (up to QUIET_TICKS times
  that on an idle bus), and a change there concerns everyone.
Every descriptor is waited on by one task in the event loop (no thread, no polling loop);
the other waiters sleep until a bump cancels their scope. Without inotify (not Linux) a
waiter stats its files every `poll_interval` instead.
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import anyio

from sqlitekit.watch import Inotify, Signature, file_signature, touched, watch_directories

# The key a waiter parks under: a recipient, or None for "any change".
Key = str | None
# The backstop reads data_version at least every this many intervals, even when no stat moved.
FULL_BACKSTOP = 4
# An idle waiter's tick grows to this many backstop intervals (see _backstop): 32 s by
# default, about the original's 30 s poll, which is what a writer that touches no signal
# waits at most on a bus that was quiet (2 s on one that moves).
QUIET_TICKS = 16


@dataclass(frozen=True)
class WatchOptions:
    """How often a waiter looks, each owner with its own (the bus's are in BusOptions)."""

    # Without inotify, waiters stat their files this often (seconds).
    poll_interval: float
    # The backstop asks SQLite this often while the files move (QUIET_TICKS times that on
    # a quiet file): the most a commit nothing else announced waits to be seen.
    backstop_interval: float


class RecipientWatcher(Protocol):
    """One descriptor on the signal files of the recipients a process waits for."""

    @property
    def fileno(self) -> int: ...

    def add(self, recipient: str) -> bool:
        """Watch `recipient`'s signal (and the broadcast one); False: stat them instead."""
        ...

    def pending(self) -> tuple[set[str], bool]:
        """Drain: the recipients whose signal moved, and whether the broadcast one did."""
        ...

    def close(self) -> None: ...


class RecipientSignals(Protocol):
    """Per-recipient wake-up files that writers touch after their commits (the bus's)."""

    def watcher(self) -> RecipientWatcher | None:
        """A descriptor to watch recipients' signals on; None without inotify."""
        ...

    def signature(self, recipient: str) -> Signature:
        """What a stat shows of `recipient`'s signal and the broadcast one."""
        ...


class ChangeWaiter:
    """The change counter of one open database; all its methods run on the event loop."""

    def __init__(
        self,
        paths: tuple[Path, ...],
        options: WatchOptions,
        read_versions: Callable[[], Awaitable[Signature]],
        signals: RecipientSignals | None = None,
    ) -> None:
        self._paths = paths
        self._options = options
        self._read_versions = read_versions
        self._signals = signals
        self._signature: Signature = file_signature(paths)
        self._versions: Signature | None = None
        self._backstop_at = 0.0
        # The files' signature at the last backstop tick, whether it moved at the one
        # before, and ticks since data_version was last asked.
        self._tick_signature: Signature = ()
        self._moved_before = True
        # The current tick: backstop_interval, doubled on each quiet tick up to QUIET_TICKS
        # times (an idle consumer wakes rarely), back to backstop_interval when a stat moves.
        self._interval = options.backstop_interval
        self._skipped = 0
        # For waiters on the database files: when to look at data_version again after the files
        # moved, and its value then (a baseline of their own: what they notice concerns
        # only them, unless the bus has no signals).
        self._follow_up_at: float | None = None
        self._files_versions: Signature | None = None
        self.generation = 0
        # The generation of the last change concerning everyone, and per recipient.
        self._everyone_at = 0
        self._marks: dict[str, int] = {}
        # Cancel scopes of parked waiters, by key: a bump cancels those it concerns.
        self._parked: dict[Key, set[anyio.CancelScope]] = {}
        # Two descriptors at most, kept for the life of the waiter (closing one costs ~9 ms
        # of wall time): the database files' (for waiters on any change) and the signals' (for
        # every recipient waited on). False: unavailable, so their waiters poll stats.
        self._files: Inotify | bool | None = None
        self._watcher: RecipientWatcher | bool | None = None
        self._polled: dict[str, Signature] = {}  # recipients whose signals are statted
        # The channels ("files", "signals") a parked waiter is waiting on: one task per
        # descriptor; the others sleep until a bump, the backstop, or a hand-over.
        self._held: set[str] = set()
        self._open: list[Inotify | RecipientWatcher] = []
        weakref.finalize(self, _close_all, self._open)

    def bump(self, recipients: Iterable[str] | None = None) -> None:
        """Record a change concerning `recipients` (None: everyone) and wake their waiters
        and every waiter for any change."""
        self.generation += 1
        if recipients is None:
            self._everyone_at = self.generation
            keys: list[Key] = list(self._parked)
        else:
            keys = [None]
            for recipient in recipients:
                self._marks[recipient] = self.generation
                keys.append(recipient)
        for key in keys:
            for scope in self._parked.pop(key, ()):
                scope.cancel()

    def mark(self, recipient: str | None) -> int:
        """The generation of the last change a waiter for `recipient` cares about."""
        if recipient is None:
            return self.generation
        return max(self._marks.get(recipient, 0), self._everyone_at)

    async def refresh(self, recipient: str | None = None) -> int:
        """Notice changes from other connections (for `recipient`'s signal too, which is
        watched from now on); returns the generation."""
        if self._files is None and (recipient is None or self._signals is None):
            # Made only for those who wait on the database files: every commit of every process
            # queues an event on it, which a recipient's waiter with signals has no use for.
            # Made before the look below, so nothing falls between the look and the watch.
            notify = watch_directories(self._paths)
            self._files = False if notify is None else notify
            if notify is not None:
                self._open.append(notify)
        self._check_files()
        if self._signals is not None:
            self._check_signals(recipient, self._signals)
        if recipient is None or self._signals is None:
            await self._follow_up()  # only those on the files need it (not a claim)
        await self._backstop()
        return self.generation

    async def _follow_up(self) -> None:
        """A commit writes its frames to the -wal file (the event and the stat that wake
        a waiter on the files) a moment before it becomes visible (in the -shm index, which
        raises no event): a reader woken by the frames may not see the commit yet. So a
        files change is followed, `poll_interval` later, by one look at data_version."""
        if not isinstance(self._files, Inotify):
            return
        now = anyio.current_time()
        first = self._files_versions is None
        if not first and (self._follow_up_at is None or now < self._follow_up_at):
            return
        self._follow_up_at = None
        versions = await self._read_versions()
        if not first and versions != self._files_versions:
            self._files_changed()
        self._files_versions = versions

    async def _backstop(self) -> None:
        """Every tick, ask SQLite whether another connection committed; such a change
        concerns everyone. Asked only when the files' stat moved in this tick or the one
        before (an idle bus costs a timer, not a thread hop), and every FULL_BACKSTOP-th
        tick regardless, in case a stat missed a commit. A tick is `backstop_interval`
        while the files move, up to QUIET_TICKS times that on an idle bus: each wake-up of
        an idle process is charged 10-50 ms of CPU on this project's virtual machines (the
        time the host takes to resume the idle vCPU counts as the process's)."""
        now = anyio.current_time()
        if now - self._backstop_at < self._interval:
            return
        self._backstop_at = now
        self._skipped += 1
        # Asked at the tick after a move too: the commit whose frames moved the files may
        # have become visible only after this tick's look (see _follow_up).
        moved, self._tick_signature = self._signature != self._tick_signature, self._signature
        quiet = not moved and not self._moved_before
        self._moved_before = moved
        base = self._options.backstop_interval
        self._interval = min(self._interval * 2, base * QUIET_TICKS) if quiet else base
        if self._versions is not None and quiet and self._skipped < FULL_BACKSTOP:
            return
        self._skipped = 0
        versions = await self._read_versions()
        if self._versions is not None and versions != self._versions:
            self.bump()
        self._versions = versions

    async def wait_past(self, since: int, recipient: str | None = None) -> None:
        """Return once a change for `recipient` (None: any change) came after generation
        `since`; cancel it to stop waiting."""
        # Without signals a recipient waits on the database files: their changes concern all.
        key = recipient if self._signals is not None else None
        channel = "files" if key is None else "signals"
        try:
            while True:
                await self.refresh(recipient)
                if self.mark(recipient) > since:
                    return
                await self._park(key, channel)
        finally:
            self._hand_over(channel)

    def close(self) -> None:
        """Close the descriptors (slow: call it off the event loop). The waiter still
        works afterwards, by the backstop and in-process bumps only."""
        self._files = self._watcher = False
        _close_all(self._open)

    async def _park(self, key: Key, channel: str) -> None:
        """Sleep until the channel's descriptor is readable, a bump concerning `key`, or
        the backstop is due."""
        fd = None if channel in self._held else self._descriptor(key, channel)
        due = math.inf  # the holder checks the backstop for all: its bump() wakes them
        if fd is not None or self._polls(key):
            due = self._backstop_at + self._interval - anyio.current_time()
            if channel == "files" and self._follow_up_at is not None:
                due = min(due, self._follow_up_at - anyio.current_time())
        with anyio.move_on_after(max(due, 0.0)) as scope:
            self._parked.setdefault(key, set()).add(scope)
            try:
                if fd is not None:
                    self._held.add(channel)
                    try:
                        await anyio.wait_readable(fd)
                    finally:
                        self._held.discard(channel)
                elif self._polls(key):
                    await anyio.sleep(self._options.poll_interval)  # no inotify: stat soon
                else:
                    await anyio.sleep_forever()  # the holder's refresh bumps us
            finally:
                parked = self._parked.get(key)
                if parked is not None:
                    parked.discard(scope)

    def _hand_over(self, channel: str) -> None:
        """A waiter left: if it held the channel's descriptor, wake one that parked without
        it, so that the descriptor is waited on again."""
        if channel in self._held:
            return
        for key, scopes in self._parked.items():
            if scopes and (key is None) == (channel == "files"):
                next(iter(scopes)).cancel()
                return

    def _descriptor(self, key: Key, channel: str) -> int | None:
        if channel == "files":
            return self._files.fileno if isinstance(self._files, Inotify) else None
        watcher = self._live_watcher()
        if key in self._polled or watcher is None:
            return None
        return watcher.fileno

    def _polls(self, key: Key) -> bool:
        if key is None:
            return self._files is False
        return key in self._polled

    def _live_watcher(self) -> RecipientWatcher | None:
        """The signals' descriptor, if it was made (None: not yet, or unavailable)."""
        return None if isinstance(self._watcher, bool) else self._watcher

    def _check_files(self) -> None:
        """The database files: a change concerns everyone without signals, else only the
        waiters for any change."""
        moved = isinstance(self._files, Inotify) and touched(self._files.drain(), self._paths)
        signature = file_signature(self._paths)
        if signature != self._signature or moved:
            self._signature = signature
            if isinstance(self._files, Inotify) and self._follow_up_at is None:
                self._follow_up_at = anyio.current_time() + self._options.poll_interval
            self._files_changed()

    def _files_changed(self) -> None:
        if self._signals is None:
            self.bump()
        else:
            self._bump_any()

    def _check_signals(self, recipient: str | None, signals: RecipientSignals) -> None:
        """Bump the recipients whose signal moved; start watching `recipient`'s."""
        if self._watcher is None:
            made = signals.watcher()
            self._watcher = False if made is None else made
            if made is not None:
                self._open.append(made)
        moved: set[str] = set()
        everyone = False
        watcher = self._live_watcher()
        if watcher is not None:
            moved, everyone = watcher.pending()
        # Recipients without a watch: (inode, size, mtime) of their file, then of `all`.
        for who, seen in self._polled.items():
            signature = signals.signature(who)
            self._polled[who] = signature
            if signature[:3] != seen[:3]:
                moved.add(who)
            everyone = everyone or signature[3:] != seen[3:]
        if recipient is not None and recipient not in self._polled:
            # Every touch from here on is seen: the watch is in place before the caller
            # reads (a claim), and the touch comes after the commit it announces.
            watched = watcher is not None and watcher.add(recipient)
            if not watched:
                self._polled[recipient] = signals.signature(recipient)
        if everyone:
            self.bump()
        elif moved:
            self.bump(moved)

    def _bump_any(self) -> None:
        self.generation += 1
        for scope in self._parked.pop(None, ()):
            scope.cancel()


def _close_all(handles: list[Inotify | RecipientWatcher]) -> None:
    while handles:
        handles.pop().close()
