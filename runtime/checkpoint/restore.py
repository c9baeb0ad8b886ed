"""Carrying out a restore plan (plan.py) on disk, one area at a time.

Order: remove what the target does not have (deepest first), then write back what it has,
then remove the folders that only the removed files needed. A write goes to a temporary file
beside its target, gets its mode, and is renamed over it, so a file is never seen half
written.

Nothing is written through a symbolic link: every folder on the way from the area to a file
is checked to be a real folder (not a link) before anything is written or removed in it. A
panel may have left a link where a folder was (a rewind removes the link first, since the
target does not have it), and the host, which restores, runs with the user's full rights.
What cannot be done (a folder in the way that still holds ignored files, a file the user
may not write) is reported, not raised: the rest of the rewind goes on.
"""

from __future__ import annotations

import os
import secrets
import stat
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from runtime.checkpoint.model import SYMLINK, BlobReader, Entry
from runtime.checkpoint.plan import AreaPlan


@dataclass
class Applied:
    """What a restore did in one area, paths relative to it."""

    area: str
    restored: list[str] = field(default_factory=list)
    recreated: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)  # (path, why)
    left: list[str] = field(default_factory=list)  # too big to be in the checkpoint


class UnsafePathError(Exception):
    """A folder on the way to a path is a link or not a folder."""


def apply_plan(plan: AreaPlan, read: BlobReader, *, umask: int | None = None) -> Applied:
    """Bring the area to the plan's target; what could not be done is in `failed`."""
    area = Path(plan.area)
    mask = _umask() if umask is None else umask
    done = Applied(plan.area, left=list(plan.left))
    area.mkdir(parents=True, exist_ok=True)
    for path in sorted(plan.remove, key=lambda p: (-p.count("/"), p)):
        try:
            _remove(area, path)
            done.removed.append(path)
        except (OSError, UnsafePathError) as exc:
            done.failed.append((path, _why(exc)))
    _prune_folders(area, plan.remove, plan.directories())
    restoring = {path for path, _ in plan.restore}
    for path, entry in plan.writes:
        try:
            _write(area, path, entry, read(entry.blob), mask)
        except (OSError, UnsafePathError) as exc:
            done.failed.append((path, _why(exc)))
            continue
        (done.restored if path in restoring else done.recreated).append(path)
    return done


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _why(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc) or type(exc).__name__


def _folder(area: Path, path: str, *, make: bool) -> Path:
    """The real folder `path` lives in, each step checked (and made when `make`)."""
    folder = area
    for part in path.split("/")[:-1]:
        folder = folder / part
        try:
            st = os.lstat(folder)
        except FileNotFoundError:
            if not make:
                raise
            os.mkdir(folder)
            continue
        if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
            raise UnsafePathError(f"{folder} is not a folder (a link or a file is in the way)")
    return folder


def _remove(area: Path, path: str) -> None:
    folder = _folder(area, path, make=False)
    target = folder / path.rsplit("/", 1)[-1]
    st = os.lstat(target)
    if stat.S_ISDIR(st.st_mode):
        raise UnsafePathError(f"{target} is a folder now; left as it is")
    os.unlink(target)


def _prune_folders(area: Path, removed: tuple[str, ...], keep: frozenset[str]) -> None:
    """Remove the folders that held removed files, when empty and not the target's."""
    candidates: set[str] = set()
    for path in removed:
        parts = path.split("/")[:-1]
        for depth in range(1, len(parts) + 1):
            candidates.add("/".join(parts[:depth]))
    for rel in sorted(candidates, key=lambda p: -p.count("/")):
        if rel in keep:
            continue
        folder = area / rel
        try:
            if stat.S_ISDIR(os.lstat(folder).st_mode) and not any(os.scandir(folder)):
                os.rmdir(folder)
        except OSError:
            continue  # not there, not empty, or not ours to remove: left as it is


def _write(area: Path, path: str, entry: Entry, data: bytes, mask: int) -> None:
    folder = _folder(area, path, make=True)
    target = folder / path.rsplit("/", 1)[-1]
    try:
        st = os.lstat(target)
    except FileNotFoundError:
        pass
    else:
        if stat.S_ISDIR(st.st_mode):
            try:
                os.rmdir(target)  # an empty folder where the file was: the file wins
            except OSError:
                raise UnsafePathError(
                    f"{target} is a folder that is not empty (files a .gitignore leaves out?)"
                ) from None
    if entry.mode == SYMLINK:
        temp = folder / f".mnemara-rewind-{secrets.token_hex(8)}"
        os.symlink(os.fsdecode(data), temp)
        os.replace(temp, target)
        return
    fd, temp_name = tempfile.mkstemp(prefix=".mnemara-rewind-", dir=folder)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            os.fchmod(out.fileno(), (0o777 if entry.mode & 0o111 else 0o666) & ~mask)
        os.replace(temp_name, target)
    except BaseException:
        Path(temp_name).unlink(missing_ok=True)
        raise
