"""Noticing that a database changed: file signatures, inotify descriptors, data_version.

The primitives under the waiter (waiter.py) and the bus's signals (peerbus/sqlite/signals.py):
- file signatures: a commit from any process appends to the `-wal` file (or rewrites the
  database file in rollback-journal mode), so `os.stat` of those files changes; a stat is a
  microsecond syscall that needs no SQLite lock and no thread hop;
- `Inotify`: a kept, non-blocking inotify descriptor the event loop waits on directly
  (`watch_directories` for the database files; the bus's per-recipient signal files).
  Without inotify (not Linux) the waiter stats instead, every `poll_interval`;
- `PRAGMA data_version` (`data_versions`), which changes when another connection commits:
  the backstop for commits nothing else announced.
A false alarm costs one look too many (a read-only pre-check in the bus's next claim); a
missed change costs at most the waiter's backstop tick.

Polling costs CPU even when nothing happens: on this project's machines every wake-up of a
sleeping thread costs 60-95 µs, so a 10 ms poll alone is ~1 % of a core. Hence inotify,
and no polling loop after a change.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import sqlite3
import struct
import sys
from pathlib import Path

Signature = tuple[int, ...]


def watched_paths(db: Path, attached: Path | None = None) -> tuple[Path, ...]:
    """The files whose metadata moves when `db` (or a database `attached` to its connection,
    the bus's sidecar) gets a commit."""
    paths = [db, db.with_name(db.name + "-wal")]
    if attached is not None:
        paths += [attached, attached.with_name(attached.name + "-wal")]
    return tuple(paths)


def file_signature(paths: tuple[Path, ...]) -> Signature:
    """Inode, size and mtime (ns) of each path; zeros for a path that does not exist."""
    sig: list[int] = []
    for path in paths:
        try:
            st = os.stat(path)
        except OSError:
            sig += (0, 0, 0)
        else:
            sig += (st.st_ino, st.st_size, st.st_mtime_ns)
    return tuple(sig)


def data_versions(conn: sqlite3.Connection, schemas: tuple[str, ...]) -> Signature:
    """PRAGMA data_version of each schema: changes when another connection commits."""
    return tuple(int(conn.execute(f"PRAGMA {s}.data_version").fetchone()[0]) for s in schemas)


# inotify event bits (linux/inotify.h).
IN_MODIFY, IN_ATTRIB, IN_MOVED_TO, IN_CREATE = 0x2, 0x4, 0x80, 0x100
IN_DELETE_SELF, IN_MOVE_SELF, IN_Q_OVERFLOW, IN_IGNORED = 0x400, 0x800, 0x4000, 0x8000
_EVENT = struct.Struct("iIII")  # wd, mask, cookie, len; then `len` bytes of name


def _libc() -> ctypes.CDLL | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    except OSError:
        return None


_LIBC = _libc()


class Inotify:
    """One inotify descriptor, non-blocking, meant to be kept open and waited on again and
    again (the event loop can wait on `fileno` directly; no thread).

    Kept, not made per wait: closing a descriptor that holds watches waits for the kernel's
    SRCU grace period, measured at ~9 ms of wall time per close on this project's machines.
    """

    def __init__(self, fd: int) -> None:
        self.fileno = fd
        self.closed = False

    @classmethod
    def open(cls) -> Inotify | None:
        """A new descriptor, or None where inotify is unavailable (not Linux, or no libc)."""
        if _LIBC is None:
            return None
        fd = int(_LIBC.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC))
        return None if fd < 0 else cls(fd)

    def add(self, path: Path, mask: int) -> int:
        """Watch `path` (a file, or a directory for events about its entries); the watch id."""
        assert _LIBC is not None  # an Inotify exists only where libc was found
        wd = int(_LIBC.inotify_add_watch(self.fileno, os.fsencode(path), mask))
        if wd < 0:
            errno = ctypes.get_errno()
            raise OSError(errno, os.strerror(errno), str(path))
        return wd

    def drain(self) -> list[tuple[int, int, str]]:
        """Read every pending event: (watch id, mask, name) each; empty when none."""
        events: list[tuple[int, int, str]] = []
        while True:
            try:
                data = os.read(self.fileno, 65536)
            except BlockingIOError:
                return events
            offset = 0
            while offset + _EVENT.size <= len(data):
                wd, mask, _, length = _EVENT.unpack_from(data, offset)
                raw = data[offset + _EVENT.size : offset + _EVENT.size + length]
                events.append((wd, mask, os.fsdecode(raw.rstrip(b"\0"))))
                offset += _EVENT.size + length

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            os.close(self.fileno)


_DIRECTORY_MASK = IN_MODIFY | IN_CREATE | IN_MOVED_TO


def watch_directories(paths: tuple[Path, ...]) -> Inotify | None:
    """One descriptor watching the directories of `paths` for writes to their entries (a
    commit appends to the -wal file or rewrites the database file); None without inotify."""
    notify = Inotify.open()
    if notify is None:
        return None
    try:
        for directory in {p.parent for p in paths}:
            notify.add(directory, _DIRECTORY_MASK)
    except OSError:
        notify.close()
        return None
    return notify


def touched(events: list[tuple[int, int, str]], paths: tuple[Path, ...]) -> bool:
    """Whether directory events name one of `paths` (or the queue overflowed: assume so)."""
    names = {p.name for p in paths}
    return any(mask & IN_Q_OVERFLOW or name in names for _, mask, name in events)
