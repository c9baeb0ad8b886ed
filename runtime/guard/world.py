"""Measuring the world state the sentinel compares: git tree, touched files, slots."""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path

import anyio
import anyio.to_thread

from runtime.guard.sentinel import WorldState
from runtime.store import AsyncTurnStore
from runtime.tools.manifest import fingerprint

GitProbe = Callable[[Path], Awaitable[str | None]]
GIT_TIMEOUT_S = 5.0


async def git_state(cwd: Path) -> str | None:
    """A hash of the git state of `cwd`, or None outside git (or when git takes too long).

    HEAD, the status, the diff of tracked files against HEAD, and the size and mtime of each
    untracked file: enough to see any change to the working tree, and read-only (nothing is
    added to the repository's objects or index).
    """

    async def git(*args: str) -> tuple[int, bytes]:
        done = await anyio.run_process(["git", *args], cwd=cwd, check=False)
        return done.returncode, done.stdout

    with anyio.move_on_after(GIT_TIMEOUT_S):
        inside, _ = await git("rev-parse", "--git-dir")
        if inside != 0:
            return None
        digest = hashlib.sha256()
        has_head, head = await git("rev-parse", "--verify", "-q", "HEAD")
        for part in (
            head,
            (await git("status", "--porcelain", "-z"))[1],
            (await git("diff", "HEAD" if has_head == 0 else "--cached"))[1],
            (await git("diff"))[1] if has_head != 0 else b"",
        ):
            digest.update(part + b"\0")
        _, untracked = await git("ls-files", "-o", "--exclude-standard", "-z")
        names = [n.decode("utf-8", "surrogateescape") for n in untracked.split(b"\0") if n]
        digest.update(repr(await anyio.to_thread.run_sync(_stats, cwd, names)).encode())
        return digest.hexdigest()
    return None


def _stats(cwd: Path, names: list[str]) -> list[tuple[str, int, int]]:
    out = []
    for name in names:
        try:
            st = (cwd / name).stat()
        except OSError:
            continue
        out.append((name, st.st_size, st.st_mtime_ns))
    return out


async def measure_world(
    store: AsyncTurnStore, written: Iterable[str], cwd: Path, git_probe: GitProbe
) -> WorldState:
    """What counts as progress: files the agent wrote (by content), slot values, git state."""
    paths = sorted(written)

    def hash_files() -> tuple[tuple[str, str], ...]:
        return tuple((p, fp.digest if (fp := fingerprint(p)) else "gone") for p in paths)

    files = await anyio.to_thread.run_sync(hash_files)
    slots = tuple(
        (s.label, hashlib.sha256(s.content.encode("utf-8")).hexdigest())
        for s in await store.slots()
    )
    return WorldState(files_written=files, slots=slots, git_tree=await git_probe(cwd))
