"""Per-recipient wake-up signals: one small file per recipient, touched after a commit.

Without them every commit wakes every waiter (each watched the whole bus file), so the CPU
a bus costs grew with the number of recipients. Now a writer that made something claimable
for recipient R touches R's signal file *after* its commit (a touch before it could wake R
before the row is visible), and R's waiter watches only that file and the broadcast one
(`all`, touched by broadcasts). A touch changes the file's times, which raises IN_ATTRIB
for an inotify watch on the file and moves its `stat` where there is no inotify.

The files live in a directory beside the bus's state file (`<bus>.signals`, in
compatibility mode `<sidecar>.signals`), made with the state file's own permissions, so
whoever may write the bus may touch them. A file's name is a hash of the recipient, never
the recipient itself: a name with `/`, `..` or odd unicode cannot leave the directory.

Touching is best effort: the commit already happened, so a failure is logged once and the
waiter's backstop (PRAGMA data_version, see sqlitekit/waiter.py) notices the commit instead.
A crash between the commit and the touch costs the same: the recipient learns of the message
at its next backstop check, at most `backstop_interval` later. Writers that know nothing of
signals (other tools, the original mnemara on a shared table) are found the same way.
"""

from __future__ import annotations

import hashlib
import logging
import os
import stat
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from sqlitekit.watch import (
    IN_ATTRIB,
    IN_DELETE_SELF,
    IN_IGNORED,
    IN_MODIFY,
    IN_MOVE_SELF,
    IN_Q_OVERFLOW,
    Inotify,
    Signature,
    file_signature,
)

log = logging.getLogger("peerbus")

BROADCAST_NAME = "all"
_MASK = IN_ATTRIB | IN_MODIFY | IN_DELETE_SELF | IN_MOVE_SELF
# The watch is gone (file deleted or moved, or events lost): re-create it.
_LOST = IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED | IN_Q_OVERFLOW


def signal_name(recipient: str | None) -> str:
    """The file name for `recipient` (None: broadcasts). A fixed-length hex digest, so no
    recipient string can form a path; the `r-` prefix keeps it apart from `all`."""
    if recipient is None:
        return BROADCAST_NAME
    digest = hashlib.sha256(recipient.encode("utf-8", "surrogatepass")).hexdigest()
    return f"r-{digest[:40]}"


@dataclass
class Signals:
    """The signal directory of one bus. `touch` after commits; `watch` to wait on one."""

    directory: Path
    # Permission bits of the bus's state file: the files get them, the directory gets
    # them plus search (x) wherever they allow reading.
    mode: int = 0o644
    _warned: bool = field(default=False, repr=False)

    @classmethod
    def beside(cls, state_file: Path) -> Signals:
        try:
            mode = stat.S_IMODE(os.stat(state_file).st_mode) & 0o666
        except OSError:
            mode = 0o644
        return cls(state_file.with_name(state_file.name + ".signals"), mode or 0o600)

    def path(self, recipient: str | None) -> Path:
        return self.directory / signal_name(recipient)

    def touch(self, recipients: Iterable[str | None]) -> None:
        """Wake the waiters of `recipients` (None: everyone). Call after the commit.
        Never raises: on failure the backstop covers the commit (logged once)."""
        for path in sorted({self.path(r) for r in recipients}):
            try:
                self._touch(path)
            except OSError as exc:
                self._warn(f"cannot touch the wake-up signal {path} ({exc})")

    def watcher(self) -> SignalWatcher | None:
        """An inotify descriptor to watch recipients' signals on (`SignalWatcher.add`);
        None where inotify is unavailable (the waiter then stats the files)."""
        notify = Inotify.open()
        return None if notify is None else SignalWatcher(self, notify)

    def signature(self, recipient: str) -> Signature:
        """What a stat shows of `recipient`'s signal and the broadcast one (no inotify)."""
        return file_signature((self.path(recipient), self.path(None)))

    def _touch(self, path: Path) -> None:
        now = time.time_ns()
        try:
            # Explicit nanoseconds: a coarse kernel clock could give two touches one mtime.
            os.utime(path, ns=(now, now), follow_symlinks=False)
        except FileNotFoundError:
            self._ensure(path)
            os.utime(path, ns=(now, now), follow_symlinks=False)
        except PermissionError:
            # Not the file's owner: setting "now" needs only write access.
            os.utime(path)

    def _ensure(self, path: Path) -> Path:
        """Make the directory and `path` if absent, with the bus's permissions."""
        if not self.directory.is_dir():
            dir_mode = self.mode | ((self.mode & 0o444) >> 2) | 0o700
            try:
                self.directory.mkdir(mode=dir_mode)
                os.chmod(self.directory, dir_mode)  # past the umask: as the bus allows
            except FileExistsError:
                pass
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC | os.O_NOFOLLOW
        try:
            fd = os.open(path, flags, self.mode)
        except FileExistsError:
            return path
        try:
            os.fchmod(fd, self.mode)
        finally:
            os.close(fd)
        return path

    def _warn(self, message: str) -> None:
        if not self._warned:
            self._warned = True
            log.warning(
                "%s; waiters notice such commits only at their backstop check (said once)",
                message,
            )


class SignalWatcher:
    """One inotify descriptor on the signal files of the recipients a process waits for,
    and on the broadcast one. One per bus, however many recipients: inotify instances are
    few per user (128 by default), watches are many."""

    def __init__(self, signals: Signals, notify: Inotify) -> None:
        self._signals = signals
        self.notify = notify
        self._recipients: dict[int, str | None] = {}  # watch id -> recipient (None: all)
        self._watched: set[str | None] = set()

    @property
    def fileno(self) -> int:
        return self.notify.fileno

    def add(self, recipient: str) -> bool:
        """Watch `recipient`'s signal (and the broadcast one); False when the files cannot
        be made or watched (then the caller stats them instead). Watching twice is free."""
        try:
            for who in (None, recipient):
                if who not in self._watched:
                    wd = self.notify.add(self._signals._ensure(self._signals.path(who)), _MASK)
                    self._recipients[wd] = who
                    self._watched.add(who)
        except OSError as exc:
            self._signals._warn(f"cannot watch the wake-up signal of {recipient!r} ({exc})")
            return False
        return True

    def pending(self) -> tuple[set[str], bool]:
        """Drain the events: the recipients whose signal moved, and whether the broadcast
        one did. A lost watch (file deleted or moved, queue overflow) counts as moved, and
        is made again at the next `add`."""
        moved: set[str] = set()
        everyone = False
        for wd, mask, _ in self.notify.drain():
            if mask & IN_Q_OVERFLOW:
                everyone = True  # events were dropped: anyone may have been touched
                continue
            who = self._recipients.get(wd)
            if wd not in self._recipients:
                continue
            if who is None:
                everyone = True
            else:
                moved.add(who)
            if mask & _LOST:
                del self._recipients[wd]
                self._watched.discard(who)
        return moved, everyone

    def close(self) -> None:
        self.notify.close()
