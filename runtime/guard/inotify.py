"""Watching a work tree with inotify: which files changed since the last look.

`TreeWatch` holds one non-blocking inotify descriptor with a watch on every directory of a
work tree (but the ones it is told to skip: ignored directories and nested repositories)
and on the repository's git directory (but its objects, logs and hooks). `changes()` drains
the kernel's queue, adds watches for the directories that appeared, and says which paths
changed, and whether the git directory changed or the watch can no longer vouch.

Exact, not eventual: the kernel queues an event inside the writing syscall itself, so a
write that returned before `changes()` is in what it reads, whichever process (or mount
namespace: a sandbox's bind mount is the same inode) made it. No thread, no debouncing.
Not seen: writes through a shared mmap, and writes to a hard link of a file made from
outside the tree (inotify reports an event under the name it was made through).

sqlitekit/watch.py has a binding of its own, for database files (one of the two could go).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os
import struct
import sys
import weakref
from collections.abc import Iterable
from dataclasses import dataclass, field

# inotify event bits (linux/inotify.h).
IN_MODIFY, IN_ATTRIB, IN_MOVED_FROM, IN_MOVED_TO = 0x2, 0x4, 0x40, 0x80
IN_CREATE, IN_DELETE, IN_DELETE_SELF, IN_MOVE_SELF = 0x100, 0x200, 0x400, 0x800
IN_UNMOUNT, IN_Q_OVERFLOW, IN_IGNORED = 0x2000, 0x4000, 0x8000
IN_ONLYDIR, IN_DONT_FOLLOW, IN_ISDIR = 0x1000000, 0x2000000, 0x40000000
WATCH_MASK = (
    IN_MODIFY | IN_ATTRIB | IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE | IN_DELETE
    | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR | IN_DONT_FOLLOW
)  # fmt: skip
MAX_WATCHES = 32768  # beyond this many directories the probe asks git instead
# Names whose change alters what git lists without any listed file changing.
RULE_FILES = frozenset({b".gitignore", b".gitattributes", b".git"})
# Files of a git directory that change what git ignores or how it compares (info/exclude...).
GIT_RULES = frozenset({b"config", b"config.worktree", b"info", b"exclude", b"attributes"})
# Parts of a git directory that do not change what `git status` prints.
GIT_SKIPPED = frozenset({b"objects", b"logs", b"hooks", b"lfs", b"modules", b"worktrees"})
_EVENT = struct.Struct("iIII")  # wd, mask, cookie, len; then `len` bytes of name


class WatchLimitError(Exception):
    """Raised when the tree has more directories than the watch limit (the kernel's
    fs.inotify.max_user_watches, or ours): the probe falls back to asking git every call."""


def _libc() -> ctypes.CDLL | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    except OSError:
        return None


class Inotify:
    """One inotify descriptor, non-blocking: `drain` reads what is queued and never waits."""

    def __init__(self, libc: ctypes.CDLL, fd: int) -> None:
        self._libc = libc
        self.fileno = fd
        # Closed by `close()`, or else when collected: an owner that forgot leaks nothing.
        self._close = weakref.finalize(self, os.close, fd)

    @property
    def closed(self) -> bool:
        return not self._close.alive

    @classmethod
    def open(cls) -> Inotify | None:
        """A new descriptor, or None where inotify is unavailable (not Linux, or no libc)."""
        libc = _libc()
        if libc is None:
            return None
        fd = int(libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC))
        return None if fd < 0 else cls(libc, fd)

    def add(self, path: bytes, mask: int) -> int:
        wd = int(self._libc.inotify_add_watch(self.fileno, path, mask))
        if wd < 0:
            code = ctypes.get_errno()
            if code == errno.ENOSPC:
                raise WatchLimitError("fs.inotify.max_user_watches is reached")
            raise OSError(code, os.strerror(code), os.fsdecode(path))
        return wd

    def drain(self) -> list[tuple[int, int, bytes]]:
        """Every pending event: (watch id, mask, name) each; empty when none."""
        events: list[tuple[int, int, bytes]] = []
        while True:
            try:
                data = os.read(self.fileno, 1 << 16)
            except BlockingIOError:
                return events
            offset = 0
            while offset + _EVENT.size <= len(data):
                wd, mask, _, length = _EVENT.unpack_from(data, offset)
                start = offset + _EVENT.size
                events.append((wd, mask, data[start : start + length].rstrip(b"\0")))
                offset = start + length

    def close(self) -> None:
        # Closing a descriptor that holds watches waits for the kernel's grace period (a few
        # ms): done once, when the session ends. Idempotent.
        self._close()


@dataclass
class Changes:
    """What changed since the last drain: work-tree paths relative to the top (bytes), and
    whether the git directory changed or the watch must be rebuilt (`rebuild`: why)."""

    paths: set[bytes] = field(default_factory=set)
    new_dirs: list[bytes] = field(default_factory=list)
    git: bool = False
    rebuild: str | None = None

    def __bool__(self) -> bool:
        return bool(self.paths or self.new_dirs or self.git or self.rebuild)


def join(folder: bytes, name: bytes) -> bytes:
    return folder + b"/" + name if folder else name


class TreeWatch:
    """inotify watches over a work tree at `root` and its git directories (see the module
    docstring). Owns its descriptor: `close()` it."""

    def __init__(self, notify: Inotify, root: bytes, *, max_watches: int = MAX_WATCHES) -> None:
        self._notify = notify
        self.root = root
        self.max_watches = max_watches
        self._dirs: dict[int, bytes] = {}  # wd -> work-tree directory, relative (b"" the top)
        self._git: dict[int, bytes] = {}  # wd -> a directory in the git directory
        self.watched: set[bytes] = set()  # work-tree directories watched
        self.skipped: set[bytes] = set()  # ignored directories and nested repositories
        self.nested: set[bytes] = set()  # nested repositories (listed by git as one entry)

    def close(self) -> None:
        self._notify.close()

    def watch_git(self, git_dir: bytes, *, top: bool = True) -> None:
        """Watch a git directory (HEAD, index, refs, packed-refs, config...) recursively."""
        stack = [(git_dir, top)]
        while stack:
            folder, skipping = stack.pop()
            try:
                wd = self._add(folder)
                with os.scandir(folder) as entries:
                    found = [e.path for e in entries if e.is_dir(follow_symlinks=False)
                             and not (skipping and e.name in GIT_SKIPPED)]  # fmt: skip
            except (FileNotFoundError, NotADirectoryError):
                continue
            self._git[wd] = folder
            stack += [(path, False) for path in found]

    def watch_tree(self, folder: bytes, skip: Iterable[bytes] = ()) -> list[bytes]:
        """Watch `folder` (relative) and every directory under it but `skip` and nested
        repositories; the files found in them (relative)."""
        self.skipped.update(skip)
        files: list[bytes] = []
        stack = [folder]
        while stack:
            found = self.watch_dir(stack.pop())
            if found is not None:
                files += found[0]
                stack += [d for d in found[1] if d not in self.skipped]
        return files

    def watch_dir(self, folder: bytes) -> tuple[list[bytes], list[bytes]] | None:
        """Watch one directory (relative); its files and subdirectories, or None when it is a
        nested repository (not watched) or gone. The watch is added before the directory is
        listed, so a file made meanwhile is listed or reported, or both."""
        path = join(self.root, folder) if folder else self.root
        if folder and os.path.lexists(path + b"/.git"):
            self.skipped.add(folder)
            self.nested.add(folder)
            return None
        try:
            wd = self._add(path)
            with os.scandir(path) as entries:
                found = [(e.name, e.is_dir(follow_symlinks=False)) for e in entries]
        except (FileNotFoundError, NotADirectoryError):
            return None  # gone again: its parent's events say so
        self._dirs[wd] = folder
        self.watched.add(folder)
        files = [join(folder, name) for name, is_dir in found if not is_dir]
        dirs = [join(folder, n) for n, is_dir in found if is_dir and (folder or n != b".git")]
        return files, dirs

    def _add(self, path: bytes) -> int:
        if len(self._dirs) + len(self._git) >= self.max_watches:
            raise WatchLimitError(f"more than {self.max_watches} directories to watch")
        return self._notify.add(path, WATCH_MASK)

    def changes(self) -> Changes:
        """Drain the queue (never waits). New directories are reported, not yet watched:
        the owner decides which are ignored and calls `watch_tree` for the others."""
        out = Changes()
        for wd, mask, name in self._notify.drain():
            if mask & IN_Q_OVERFLOW:
                out.rebuild = "the inotify queue overflowed"
            elif mask & IN_IGNORED:
                self.watched.discard(self._dirs.pop(wd, b"\0"))
                self._git.pop(wd, None)
            elif wd in self._git:
                out.git = True
                if mask & IN_ISDIR and mask & (IN_CREATE | IN_MOVED_TO):
                    self.watch_git(join(self._git[wd], name), top=False)
                if name in GIT_RULES:
                    out.rebuild = f"the repository's {os.fsdecode(name)} changed"
            elif wd in self._dirs:
                self._note(out, self._dirs[wd], mask, name)
        return out

    def _note(self, out: Changes, folder: bytes, mask: int, name: bytes) -> None:
        rel = join(folder, name)
        if mask & (IN_DELETE_SELF | IN_MOVE_SELF | IN_UNMOUNT):
            if not folder:
                out.rebuild = "the work tree's top directory moved or went away"
            return
        if name in RULE_FILES:
            out.rebuild = f"{os.fsdecode(rel)} changed"
        elif not mask & IN_ISDIR:
            out.paths.add(rel)
        elif mask & (IN_CREATE | IN_MOVED_TO):
            out.new_dirs.append(rel)
        elif mask & IN_MOVED_FROM and rel in self.watched:
            out.rebuild = f"the directory {os.fsdecode(rel)} moved"  # its files are unknown
        elif mask & (IN_DELETE | IN_MOVED_FROM) and rel in self.nested:
            out.rebuild = f"the nested repository {os.fsdecode(rel)} went away"
