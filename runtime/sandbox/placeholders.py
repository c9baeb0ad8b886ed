"""Empty stand-ins for names that run code later and do not exist yet in a writable root.

A bind needs something to cover, so `.envrc` (direnv runs it on `cd`) and `.git` (a repository
made there runs its own config and hooks on the operator's next `git status`) get an empty
file and an empty directory while turns run; guards.py binds them read-only like the real
ones. A `.git` placeholder also stops `git init` at the root of a working directory, which
the operator does once instead (the error names the read-only `.git`).

One name cannot be covered: `.git/commondir`, which points git at another directory's config
and hooks. Git refuses to work when it exists at all, so no stand-in can hold its place. In a
repository's own `.git` it never belongs, so it is moved aside (`commondir.refused-by-mnemara`)
before and after every turn, with a warning through Python logging.

One host's turns share the stand-ins: they are made when the first turn starts and removed
when the last one ends, if still empty. Removing one sooner would lift the bind inside a
sandbox still running (the kernel detaches mounts on a removed path). A host killed in a turn
leaves them; the next turn adopts them and removes them when it ends.

Other processes may share a root too (two hosts on one working directory, solo mode beside a
team): each holds a shared `flock` on every stand-in it uses, and removes one only when it
can take the lock exclusively, so no process pulls a stand-in from under another's sandbox.
A stand-in removed between a process finding it and locking it is found out (its inode no
longer has the name) and made again.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path

FILES = (".envrc",)
DIRS = (".git",)
REFUSED = "commondir.refused-by-mnemara"
log = logging.getLogger(__name__)


class Placeholders:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._turns = 0
        self._made: dict[Path, int] = {}  # each stand-in and the fd holding its shared lock

    @contextlib.contextmanager
    def held(self, roots: Sequence[Path]) -> Iterator[None]:
        """Stand-ins in each of `roots` for the length of one turn."""
        with self._lock:
            self._turns += 1
            for root in roots:
                refuse_commondir(root)
                for path in _make(root):
                    if path not in self._made and (fd := _share(path)) is not None:
                        self._made[path] = fd
        try:
            yield
        finally:
            for root in roots:
                refuse_commondir(root)
            with self._lock:
                self._turns -= 1
                if self._turns == 0:
                    for path, fd in self._made.items():
                        _release(path, fd)
                    self._made.clear()


def _make(root: Path) -> list[Path]:
    made: list[Path] = []
    for name, is_dir in [*((f, False) for f in FILES), *((d, True) for d in DIRS)]:
        path = root / name
        try:
            if is_dir:
                path.mkdir()
            else:
                path.touch(exist_ok=False)
        except FileExistsError:
            if _is_empty(path):
                made.append(path)  # one left by a host that died in a turn
        except OSError:
            continue  # a root this user cannot write: nor can the panel
        else:
            made.append(path)
    return made


def _share(path: Path) -> int | None:
    """A shared lock on the stand-in at `path`, made again if another process removed it
    before the lock was held; the fd holding the lock (None: it could not be held)."""
    for _ in range(5):
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except FileNotFoundError:
            _make_one(path)
            continue
        except OSError:
            return None
        fcntl.flock(fd, fcntl.LOCK_SH)
        try:
            same = os.stat(path, follow_symlinks=False).st_ino == os.fstat(fd).st_ino
        except OSError:
            same = False
        if same:
            return fd
        os.close(fd)  # removed (and perhaps made again) while we locked it: once more
        _make_one(path)
    return None


def _release(path: Path, fd: int) -> None:
    """Remove the stand-in if no other process holds it, then let go of it."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        pass  # another process's sandbox still covers it: that process removes it
    else:
        _remove_if_empty(path)
    finally:
        os.close(fd)


def _make_one(path: Path) -> None:
    with contextlib.suppress(OSError):
        if path.name in DIRS:
            path.mkdir()
        else:
            path.touch(exist_ok=False)


def _is_empty(path: Path) -> bool:
    try:
        if path.is_symlink():
            return False
        if path.is_dir():
            return not any(path.iterdir())
        return path.is_file() and path.stat().st_size == 0
    except OSError:
        return False


def _remove_if_empty(path: Path) -> None:
    if not _is_empty(path):
        return
    with contextlib.suppress(OSError):
        if path.is_dir():
            path.rmdir()
        else:
            path.unlink()


def refuse_commondir(root: Path) -> Path | None:
    """Move `root/.git/commondir` aside when `.git` is a repository's own directory (a linked
    worktree's `.git` is a file, and its commondir lives elsewhere); the path it went to."""
    git = root / ".git"
    found = git / "commondir"
    if git.is_symlink() or not git.is_dir() or not (found.exists() or found.is_symlink()):
        return None
    aside = git / REFUSED
    try:
        found.replace(aside)
    except OSError as exc:
        log.warning("could not move aside %s (it points git elsewhere): %s", found, exc)
        return None
    log.warning("moved aside %s, which points git elsewhere: kept as %s", found, aside)
    return aside
