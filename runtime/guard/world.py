"""Measuring the world the sentinel compares: touched files, the git state, slots.

`WorldProbe` is what the guard asks before every tool call and at the end of a turn;
`WorkingTree` is the real one, over a panel's working directory and its store's slots:

- files: the content hash (sha256) of every file the calls named (`touched_paths`: the
  file-path inputs, and the words of a Bash command that may name files, such as `x.py` in
  `sed -i s/a/b/ x.py`, found without running anything), "gone" for a missing one. A file
  over `HASH_FILE_BYTES`, or past `HASH_TOTAL_BYTES` in one measure, counts by size, mtime
  and inode instead. Digests are cached by (inode, size, mtime, ctime) once the file is
  older than `RACY_SECONDS`, so an unchanged file is not read again. Under the watch (see
  git, below) a file's digest stands until the watch reports a change to it: not even a
  stat, racily new or not; and when only a few small files are to be read they are read on
  the event loop, since a hop to a worker thread would cost more.
- git: a digest of HEAD (and ahead/behind), the index and the work tree, with the contents
  of the changed files, as `git status` sees them (gitstatus.py: `git_state`). Measured in
  full it costs a scan of the tree (~100 ms on 50,000 files), so the working tree keeps it
  current from inotify events between full measures instead (gitwatch.py), the same digest
  for a fraction of a millisecond while nothing changed; it falls back to `git_state` on
  every call where that cannot be done (and logs why, once).
- slots: the hash of each slot's value (the panel's notes: the sentinel never counts them).

Test outcomes are not measured here: the sentinel takes them from the results of the test
commands it sees (runtime/guard/calls.py).
"""

from __future__ import annotations

import hashlib
import os
import stat
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from pathlib import Path
from typing import Protocol

import anyio
import anyio.to_thread

from runtime.guard.commands import named_paths
from runtime.guard.gitstatus import (
    HASH_FILE_BYTES,
    HASH_TOTAL_BYTES,
    GitProbe,
    few_and_small,
    git_state,
    sha256_file,
)
from runtime.guard.gitwatch import WatchedGit
from runtime.guard.inotify import MAX_WATCHES
from runtime.guard.sentinel import WorldState
from runtime.turn.driver import ToolCallRequest

__all__ = ["FileHasher", "GitProbe", "WorkingTree", "WorldProbe", "git_state", "touched_paths"]
RACY_SECONDS = 2.0
CACHE_ENTRIES = 4096
_PATH_KEYS = ("file_path", "notebook_path", "path")


class WorldProbe(Protocol):
    """Measures the world a panel's calls can change."""

    @property
    def root(self) -> Path: ...

    async def measure(self, touched: Sequence[str]) -> WorldState:
        """The state now: `touched` are the files whose content counts (absolute paths)."""
        ...


def touched_paths(call: ToolCallRequest, cwd: str | None) -> tuple[str, ...]:
    """The files a call names, made absolute against `cwd`: its path inputs, and for Bash the
    words of the command that may name files (runtime/guard/commands.py). Pure, bounded."""
    base = cwd or "/"
    found = []
    for key in _PATH_KEYS:
        value = call.input.get(key)
        if isinstance(value, str) and value and len(value) < 4096 and "\0" not in value:
            found.append(os.path.normpath(os.path.join(base, os.path.expanduser(value))))
    command = call.input.get("command")
    if call.name == "Bash" and isinstance(command, str):
        found += named_paths(command, base)
    return tuple(dict.fromkeys(found))


class WorkingTree:
    """The real probe: touched files, the git state of the working directory, slot values.

    With the real git state (`git`: None or `git_state`) and `watch`, the state is kept
    current by a watcher (gitwatch.py) that holds an inotify descriptor: `close()` the tree
    when its session ends. Any other `git` probe (a test's) is asked before every call."""

    def __init__(
        self,
        root: Path,
        slots: Callable[[], Awaitable[Sequence[tuple[str, str]]]],
        *,
        git: GitProbe | None = None,
        watch: bool = True,
        max_watches: int = MAX_WATCHES,
        bookkeeping: Sequence[str] = (),
    ) -> None:
        self._root = root
        self._slots = slots
        self._git = git or git_state
        self._hasher = FileHasher()
        self._epoch = -1
        self._bookkeeping = tuple(bookkeeping)  # files left out of the git digest
        real = self._git is git_state
        self.watched = (
            WatchedGit(root, max_watches=max_watches, bookkeeping=self._bookkeeping)
            if watch and real
            else None
        )

    @property
    def root(self) -> Path:
        return self._root

    async def measure(self, touched: Sequence[str]) -> WorldState:
        paths = sorted(set(touched))
        watched = self.watched
        vouch: Callable[[str], bool] | None = None
        if watched is not None:
            git_tree = await watched.state()  # first: it drains the events the files need
            if watched.watching:
                if watched.epoch != self._epoch:  # watched anew: events may have been lost
                    self._hasher.forget(None)
                    self._epoch = watched.epoch
                self._hasher.forget(watched.take_changed())
                vouch = watched.watches
        if vouch is not None and few_and_small(self._hasher.unvouched(paths)):
            files = self._hasher.digests(paths, vouch)  # lookups, and a few small reads
        else:
            files = await anyio.to_thread.run_sync(self._hasher.digests, paths, vouch)
        slots = tuple(
            (label, hashlib.sha256(content.encode("utf-8")).hexdigest())
            for label, content in await self._slots()
        )
        if watched is None and self._git is git_state:
            git_tree = await git_state(self._root, bookkeeping=self._bookkeeping)
        elif watched is None:
            git_tree = await self._git(self._root)
        return WorldState(files_written=files, slots=slots, git_tree=git_tree)

    def close(self) -> None:
        """Stop watching (idempotent); a later measure asks git in full."""
        if self.watched is not None:
            self.watched.close()


class FileHasher:
    """Content hashes of files, bounded and cached (see the module docstring). Sync: run it in
    a worker thread."""

    def __init__(
        self, *, file_bytes: int = HASH_FILE_BYTES, total_bytes: int = HASH_TOTAL_BYTES
    ) -> None:
        self.file_bytes = file_bytes
        self.total_bytes = total_bytes
        self._cache: dict[str, tuple[tuple[int, int, int, int], str]] = {}
        self._vouched: dict[str, str] = {}  # digests valid until the watcher reports a change

    def digests(
        self, paths: Sequence[str], vouch: Callable[[str], bool] | None = None
    ) -> tuple[tuple[str, str], ...]:
        """The paths' digests. `vouch(path)`: a change to the file would be reported (to
        `forget`), so its digest stands until then: not even a stat, racily new or not."""
        budget = self.total_bytes
        out = []
        for path in paths:
            known = None if vouch is None else self._vouched.get(path)
            if known is not None:
                out.append((path, known))
                continue
            digest, read = self.digest(path, budget)
            budget -= read
            out.append((path, digest))
            if vouch is not None and vouch(path):
                if len(self._vouched) >= CACHE_ENTRIES:
                    self._vouched.clear()
                self._vouched[path] = digest
        return tuple(out)

    def unvouched(self, paths: Sequence[str]) -> list[str]:
        """The paths whose digests must be made (read or stat), not looked up."""
        return [path for path in paths if path not in self._vouched]

    def forget(self, paths: Iterable[str] | None) -> None:
        """Drop the vouched digests of `paths` (changed), or all of them (None)."""
        if paths is None:
            self._vouched.clear()
        for path in paths or ():
            self._vouched.pop(path, None)

    def digest(self, path: str, budget: int) -> tuple[str, int]:
        """The file's digest and how many bytes were read for it."""
        try:
            st = os.stat(path)
        except OSError:
            return "gone", 0
        if not stat.S_ISREG(st.st_mode):
            return "gone", 0
        signature = (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
        cached = self._cache.get(path)
        if cached is not None and cached[0] == signature:
            return cached[1], 0
        if st.st_size > min(self.file_bytes, budget):
            return f"stat:{st.st_size}:{st.st_mtime_ns}:{st.st_ino}", 0
        try:
            digest = sha256_file(path)
        except OSError:
            return "gone", 0
        # A file written within the clock's resolution of now could change again without its
        # mtime moving ("racily clean", as git calls it): such a digest is not cached.
        if time.time() - st.st_mtime > RACY_SECONDS:
            if len(self._cache) >= CACHE_ENTRIES:
                self._cache.clear()
            self._cache[path] = (signature, digest)
        return digest, st.st_size
