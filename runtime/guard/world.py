"""Measuring the world the sentinel compares: touched files, the git state, slots.

`WorldProbe` is what the guard asks before every tool call and at the end of a turn;
`WorkingTree` is the real one, over a panel's working directory and its store's slots:

- files: the content hash (sha256) of every file the calls named (`touched_paths`: the
  file-path inputs, and the words of a Bash command that may name files, such as `x.py` in
  `sed -i s/a/b/ x.py`, found without running anything), "gone" for a missing one. A file
  over `HASH_FILE_BYTES`, or past `HASH_TOTAL_BYTES` in one measure, counts by size, mtime
  and inode instead. Digests are cached by (inode, size, mtime, ctime) once the file is
  older than `RACY_SECONDS`, so an unchanged file is not read again.
- git (`git_state`): HEAD (and ahead/behind), the index and the work tree, from two
  read-only commands at the repository's top level: `git rev-parse --show-toplevel`, then
  `git status --porcelain=v2 -z --branch --untracked-files=all --ignore-submodules=dirty`,
  both with `--no-optional-locks` (and GIT_OPTIONAL_LOCKS=0) so git never refreshes the
  index on disk, and `core.fsmonitor=false` so no daemon starts: nothing is written to the
  repository. Plus the content hash of each changed or untracked file listed (at most
  `GIT_HASH_FILES` files and `HASH_TOTAL_BYTES` by content, the rest by size and mtime).
  Off the event loop (a subprocess, hashing in a worker thread), bounded by `GIT_TIMEOUT_S`
  (git is killed past it) and `GIT_OUTPUT_BYTES`; None outside a repository, when git is
  missing or too slow. Outside a repository git is not started at all: no `.git` in the
  directory or its parents (and no GIT_DIR or the like) means git would find none either.
- slots: the hash of each slot's value (the panel's notes: the sentinel never counts them).

Test outcomes are not measured here: the sentinel takes them from the results of the test
commands it sees (runtime/guard/calls.py).
"""

from __future__ import annotations

import hashlib
import os
import stat
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from subprocess import DEVNULL
from typing import Protocol

import anyio
import anyio.to_thread

from runtime.driver import ToolCallRequest
from runtime.guard.commands import named_paths
from runtime.guard.sentinel import WorldState

GitProbe = Callable[[Path], Awaitable[str | None]]
GIT_TIMEOUT_S = 5.0
GIT_OUTPUT_BYTES = 4 * 1024 * 1024
GIT_HASH_FILES = 500
HASH_FILE_BYTES = 8 * 1024 * 1024
HASH_TOTAL_BYTES = 64 * 1024 * 1024
RACY_SECONDS = 2.0
CACHE_ENTRIES = 4096
_PATH_KEYS = ("file_path", "notebook_path", "path")
_GIT_ENV = {
    "GIT_OPTIONAL_LOCKS": "0",
    "GIT_TERMINAL_PROMPT": "0",
    "LC_ALL": "C",
    "GIT_PAGER": "cat",
}


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
    """The real probe: touched files, the git state of the working directory, slot values."""

    def __init__(
        self,
        root: Path,
        slots: Callable[[], Awaitable[Sequence[tuple[str, str]]]],
        *,
        git: GitProbe | None = None,
    ) -> None:
        self._root = root
        self._slots = slots
        self._git = git or git_state
        self._hasher = FileHasher()

    @property
    def root(self) -> Path:
        return self._root

    async def measure(self, touched: Sequence[str]) -> WorldState:
        paths = sorted(set(touched))
        files = await anyio.to_thread.run_sync(self._hasher.digests, paths)
        slots = tuple(
            (label, hashlib.sha256(content.encode("utf-8")).hexdigest())
            for label, content in await self._slots()
        )
        return WorldState(files_written=files, slots=slots, git_tree=await self._git(self._root))


class FileHasher:
    """Content hashes of files, bounded and cached (see the module docstring). Sync: run it in
    a worker thread."""

    def __init__(
        self, *, file_bytes: int = HASH_FILE_BYTES, total_bytes: int = HASH_TOTAL_BYTES
    ) -> None:
        self.file_bytes = file_bytes
        self.total_bytes = total_bytes
        self._cache: dict[str, tuple[tuple[int, int, int, int], str]] = {}

    def digests(self, paths: Sequence[str]) -> tuple[tuple[str, str], ...]:
        budget = self.total_bytes
        out = []
        for path in paths:
            digest, read = self.digest(path, budget)
            budget -= read
            out.append((path, digest))
        return tuple(out)

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
            digest = _sha256(path)
        except OSError:
            return "gone", 0
        # A file written within the clock's resolution of now could change again without its
        # mtime moving ("racily clean", as git calls it): such a digest is not cached.
        if time.time() - st.st_mtime > RACY_SECONDS:
            if len(self._cache) >= CACHE_ENTRIES:
                self._cache.clear()
            self._cache[path] = (signature, digest)
        return digest, st.st_size


def _sha256(path: str | Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


# -- git ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class GitStatus:
    """`git status --porcelain=v2 -z --branch`, parsed: HEAD and the paths to hash."""

    head: str  # the commit, or "(initial)" before the first one
    changed: tuple[str, ...]  # work-tree files that differ from the index, and untracked ones


@dataclass(frozen=True)
class GitSnapshot:
    root: Path
    status: bytes  # the raw porcelain v2 output (HEAD, ahead/behind, index object ids, paths)
    contents: tuple[tuple[str, str], ...]  # (changed or untracked path, its digest)
    truncated: bool = False

    @property
    def digest(self) -> str:
        h = hashlib.sha256(self.status)
        h.update(repr((self.contents, self.truncated)).encode("utf-8", "surrogateescape"))
        return h.hexdigest()


def parse_status(output: bytes) -> GitStatus:
    """The porcelain v2 (`-z`) output of `git status`. Pure."""
    fields = output.split(b"\0")
    head = ""
    changed: list[str] = []
    i = 0
    while i < len(fields):
        entry = fields[i].decode("utf-8", "surrogateescape")
        i += 1
        kind = entry[:1]
        if entry.startswith("# branch.oid "):
            head = entry.removeprefix("# branch.oid ")
        elif kind == "?":
            changed.append(entry[2:])
        elif kind in ("1", "2", "u"):
            parts = entry.split(" ", {"1": 8, "2": 9, "u": 10}[kind])
            if len(parts) < 2:
                continue
            if kind == "2":
                i += 1  # a rename or copy: the original path follows in its own field
            work_tree = parts[1][1:2]  # Y of XY: the work tree against the index
            if work_tree not in (".", "D"):
                changed.append(parts[-1])
    return GitStatus(head, tuple(changed))


# Variables that let git find a repository other than by looking for `.git` upwards.
_GIT_LOCATORS = ("GIT_DIR", "GIT_WORK_TREE", "GIT_COMMON_DIR")


def outside_any_repository(cwd: Path) -> bool:
    """True when git could not find a work tree for `cwd`: no `.git` in it or any parent and
    no variable pointing git elsewhere. Answers without starting git, which costs a few
    milliseconds per call in a panel that works outside git."""
    if any(name in os.environ for name in _GIT_LOCATORS):
        return False
    try:
        here = cwd.resolve()
    except (OSError, RuntimeError):
        return False
    return not any(os.path.lexists(d / ".git") for d in (here, *here.parents))


async def git_snapshot(cwd: Path) -> GitSnapshot | None:
    """The git state of the repository holding `cwd` (see the module docstring)."""
    if outside_any_repository(cwd):
        return None
    with anyio.move_on_after(GIT_TIMEOUT_S):
        found = await _git(cwd, "rev-parse", "--show-toplevel")
        if found is None or found[0] != 0:
            return None
        root = Path(found[1].decode("utf-8", "surrogateescape").strip())
        status = await _git(
            root,
            "status",
            "--porcelain=v2",
            "-z",
            "--branch",
            "--untracked-files=all",
            "--ignore-submodules=dirty",
        )
        if status is None or status[0] != 0:
            return None
        _, output, truncated = status
        changed = parse_status(output).changed
        contents = await anyio.to_thread.run_sync(_hash_changed, root, changed)
        return GitSnapshot(root, output, contents, truncated)
    return None


async def git_state(cwd: Path) -> str | None:
    """A digest of the git state of `cwd`, or None outside git (or when git takes too long)."""
    snapshot = await git_snapshot(cwd)
    return None if snapshot is None else snapshot.digest


async def _git(cwd: Path, *args: str) -> tuple[int, bytes, bool] | None:
    """Run git read-only; (exit code, stdout up to GIT_OUTPUT_BYTES, truncated)."""
    command = ["git", "--no-optional-locks", "-c", "core.fsmonitor=false", *args]
    env = {**os.environ, **_GIT_ENV}
    try:
        process = await anyio.open_process(command, cwd=cwd, env=env, stdin=DEVNULL, stderr=DEVNULL)
    except OSError:
        return None  # no git, or no such directory
    # Closing the process (also when the timeout cancels us) kills it if it still runs.
    async with process:
        assert process.stdout is not None
        chunks: list[bytes] = []
        size = 0
        truncated = False
        async for chunk in process.stdout:
            if size + len(chunk) > GIT_OUTPUT_BYTES:
                truncated = True
                process.kill()
                break
            chunks.append(chunk)
            size += len(chunk)
        code = await process.wait()
    return 0 if truncated else code, b"".join(chunks), truncated


def _hash_changed(root: Path, paths: Sequence[str]) -> tuple[tuple[str, str], ...]:
    out = []
    budget = HASH_TOTAL_BYTES
    for n, name in enumerate(paths):
        path = root / name
        try:
            st = path.lstat()
        except OSError:
            out.append((name, "gone"))
            continue
        small = st.st_size <= min(HASH_FILE_BYTES, budget)
        if n < GIT_HASH_FILES and stat.S_ISREG(st.st_mode) and small:
            try:
                out.append((name, _sha256(path)))
                budget -= st.st_size
                continue
            except OSError:
                pass
        out.append((name, f"stat:{st.st_size}:{st.st_mtime_ns}:{st.st_mode}"))
    return tuple(out)
