"""The git state of a working directory, measured in full: `git status` and changed contents.

`git_state` is a digest of HEAD (and ahead/behind), the index and the work tree, from two
read-only commands at the repository's top level: `git rev-parse --show-toplevel`, then
`git status --porcelain=v2 -z --branch --untracked-files=all --ignore-submodules=dirty`,
both with `--no-optional-locks` (and GIT_OPTIONAL_LOCKS=0) so git never refreshes the index
on disk, and `core.fsmonitor=false` so no daemon starts: nothing is written to the
repository. Plus the content hash of each changed or untracked file listed (at most
`GIT_HASH_FILES` files and `HASH_TOTAL_BYTES` by content, the rest by size and mtime).
Off the event loop (a subprocess, hashing in a worker thread), bounded by `GIT_TIMEOUT_S`
(git is killed past it) and `GIT_OUTPUT_BYTES`; None outside a repository, when git is
missing or too slow. Outside a repository git is not started at all: no `.git` in the
directory or its parents (and no GIT_DIR or the like) means git would find none either.

This costs a full scan of the work tree (about 100 ms on 50,000 files); gitwatch.py keeps
the same digest current between scans from inotify events.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from subprocess import DEVNULL, PIPE

import anyio
import anyio.abc
import anyio.to_thread

from runtime.guard.bookkeeping import MASKED_BYTES, content_digest, is_bookkeeping
from runtime.guard.gitrecords import join_status, split_status

GitProbe = Callable[[Path], Awaitable[str | None]]
GIT_TIMEOUT_S = 5.0
GIT_OUTPUT_BYTES = 4 * 1024 * 1024
GIT_HASH_FILES = 500
HASH_FILE_BYTES = 8 * 1024 * 1024
HASH_TOTAL_BYTES = 64 * 1024 * 1024
INLINE_FILES = 8
INLINE_BYTES = 64 * 1024
STATUS_ARGS = (
    "status",
    "--porcelain=v2",
    "-z",
    "--branch",
    "--untracked-files=all",
    "--ignore-submodules=dirty",
)
_GIT_ENV = {
    "GIT_OPTIONAL_LOCKS": "0",
    "GIT_TERMINAL_PROMPT": "0",
    "LC_ALL": "C",
    "GIT_PAGER": "cat",
}
# Variables that let git find a repository other than by looking for `.git` upwards.
GIT_LOCATORS = ("GIT_DIR", "GIT_WORK_TREE", "GIT_COMMON_DIR")

# What a changed file's hash was made from: (lstat's size, mtime, mode; sha256 or None).
HashCache = dict[str, tuple[int, int, int, str | None]]


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
    # Globs of bookkeeping files (bookkeeping.py): left out of the digest, so a log or a
    # notes file that changes does not change the state.
    bookkeeping: tuple[str, ...] = ()

    @property
    def digest(self) -> str:
        status, contents = self.status, self.contents
        if self.bookkeeping:
            status, contents = _without_bookkeeping(status, contents, self.bookkeeping)
        h = hashlib.sha256(status)
        h.update(repr((contents, self.truncated)).encode("utf-8", "surrogateescape"))
        return h.hexdigest()


def _without_bookkeeping(
    status: bytes, contents: tuple[tuple[str, str], ...], patterns: tuple[str, ...]
) -> tuple[bytes, tuple[tuple[str, str], ...]]:
    split = split_status(status)
    if split is None:  # a form the records do not rebuild: judged as it is
        return status, contents
    header, records = split
    kept = {
        path: record
        for path, record in records.items()
        if not is_bookkeeping(path.decode("utf-8", "surrogateescape"), patterns)
    }
    if len(kept) == len(records):
        return status, contents
    return join_status(header, kept), tuple(
        (path, digest) for path, digest in contents if not is_bookkeeping(path, patterns)
    )


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


def outside_any_repository(cwd: Path) -> bool:
    """True when git could not find a work tree for `cwd`: no `.git` in it or any parent and
    no variable pointing git elsewhere. Answers without starting git, which costs a few
    milliseconds per call in a panel that works outside git."""
    if any(name in os.environ for name in GIT_LOCATORS):
        return False
    try:
        here = cwd.resolve()
    except (OSError, RuntimeError):
        return False
    return not any(os.path.lexists(d / ".git") for d in (here, *here.parents))


async def top_level(cwd: Path) -> Path | None:
    """The work tree's top directory (`git rev-parse --show-toplevel`), or None."""
    found = await run_git(cwd, "rev-parse", "--show-toplevel")
    if found is None or found[0] != 0:
        return None
    return Path(found[1].decode("utf-8", "surrogateescape").strip())


async def git_snapshot(
    cwd: Path, cache: HashCache | None = None, *, bookkeeping: tuple[str, ...] = ()
) -> GitSnapshot | None:
    """The git state of the repository holding `cwd` (see the module docstring). `cache`
    keeps changed files' hashes for a caller that knows which files changed since;
    `bookkeeping` files are left out of its digest."""
    if outside_any_repository(cwd):
        return None
    with anyio.move_on_after(GIT_TIMEOUT_S):
        root = await top_level(cwd)
        if root is None:
            return None
        status = await run_git(root, *STATUS_ARGS)
        if status is None or status[0] != 0:
            return None
        _, output, truncated = status
        changed = parse_status(output).changed
        contents = await anyio.to_thread.run_sync(hash_changed, root, changed, cache)
        return GitSnapshot(root, output, contents, truncated, bookkeeping)
    return None


async def git_state(cwd: Path, *, bookkeeping: tuple[str, ...] = ()) -> str | None:
    """A digest of the git state of `cwd`, or None outside git (or when git takes too long);
    `bookkeeping` files are left out of it."""
    snapshot = await git_snapshot(cwd, bookkeeping=bookkeeping)
    return None if snapshot is None else snapshot.digest


async def run_git(
    cwd: Path, *args: str, stdin: bytes | None = None, limit: int | None = None
) -> tuple[int, bytes, bool] | None:
    """Run git read-only; (exit code, stdout up to `limit` or GIT_OUTPUT_BYTES, truncated)."""
    limit = GIT_OUTPUT_BYTES if limit is None else limit
    command = ["git", "--no-optional-locks", "-c", "core.fsmonitor=false", *args]
    env = {**os.environ, **_GIT_ENV}
    feed = DEVNULL if stdin is None else PIPE
    try:
        process = await anyio.open_process(command, cwd=cwd, env=env, stdin=feed, stderr=DEVNULL)
    except OSError:
        return None  # no git, or no such directory
    # Closing the process (also when the timeout cancels us) kills it if it still runs.
    async with process:
        assert process.stdout is not None
        chunks: list[bytes] = []
        truncated = False
        async with anyio.create_task_group() as tasks:
            if stdin is not None:
                # Fed while the answer is read: git may answer before it read everything
                # (check-ignore does), and a full pipe each way would wait for ever.
                tasks.start_soon(_feed, process, stdin)
            size = 0
            async for chunk in process.stdout:
                if size + len(chunk) > limit:
                    truncated = True
                    process.kill()
                    break
                chunks.append(chunk)
                size += len(chunk)
            code = await process.wait()
    return 0 if truncated else code, b"".join(chunks), truncated


async def _feed(process: anyio.abc.Process, data: bytes) -> None:
    assert process.stdin is not None
    try:
        await process.stdin.send(data)
        await process.stdin.aclose()
    except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
        pass  # git stopped reading (killed past the output limit): its answer says so


def hash_changed(
    root: Path, paths: Sequence[str], cache: HashCache | None = None
) -> tuple[tuple[str, str], ...]:
    """Each changed path's digest: by content within the budgets, else by size and mtime.
    A path in `cache` is taken from it (its owner drops the paths that changed since)."""
    out = []
    budget = HASH_TOTAL_BYTES
    for n, name in enumerate(paths):
        path = root / name
        known = None if cache is None else cache.get(name)
        if known is None:
            try:
                st = path.lstat()
            except OSError:
                out.append((name, "gone"))
                continue
            known = (st.st_size, st.st_mtime_ns, st.st_mode, None)
        size, mtime_ns, mode, digest = known
        small = size <= min(HASH_FILE_BYTES, budget)
        if n < GIT_HASH_FILES and stat.S_ISREG(mode) and small:
            try:
                digest = digest or sha256_file(path)
            except OSError:
                pass
            else:
                out.append((name, digest))
                budget -= size
                if cache is not None:
                    cache[name] = (size, mtime_ns, mode, digest)
                continue
        out.append((name, f"stat:{size}:{mtime_ns}:{mode}"))
        if cache is not None:
            cache[name] = known
    return tuple(out)


def few_and_small(paths: Iterable[str | Path]) -> bool:
    """Whether reading `paths` costs less than a hop to a worker thread (~0.2 ms at rest,
    milliseconds on a loaded machine): at most INLINE_FILES files of INLINE_BYTES each (a
    missing one counts as small). The probe reads those on the event loop."""
    for n, path in enumerate(paths):
        if n >= INLINE_FILES:
            return False
        try:
            if os.lstat(path).st_size > INLINE_BYTES:
                return False
        except OSError:
            pass
    return True


def sha256_file(path: str | Path) -> str:
    """The file's content digest; a small text file's with its timestamps masked
    (bookkeeping.content_digest), so a file whose only change is a time has not changed."""
    with open(path, "rb") as fh:
        head = fh.read(MASKED_BYTES + 1)
        if len(head) <= MASKED_BYTES:
            return content_digest(head)
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()
