"""The one contract of a checkpoint store, and which store an instance uses.

Two stores keep checkpoints under `<instance>/checkpoints/`: `GitStore` (gitstore.py), a
private bare repository, used wherever git is installed, and `CopyStore` (copystore.py),
content-addressed copies, used where it is not. Both pass one conformance suite
(tests/runtime/checkpoint/test_conformance.py); the rewind (rewind.py) and the host know
only `CheckpointStore`. An instance keeps the store it started with: its folder says which.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable, Collection, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Protocol

from runtime.checkpoint.model import (
    BlobReader,
    Checkpoint,
    CheckpointSettings,
    Files,
    Kind,
    StoreKind,
    Taken,
)
from runtime.checkpoint.plan import plan_prune
from runtime.errors import CheckpointError

CHECKPOINTS_DIR = "checkpoints"


class CheckpointStore(Protocol):
    kind: StoreKind
    root: Path

    def take(
        self,
        areas: Sequence[Path],
        *,
        kind: Kind,
        settings: CheckpointSettings,
        exclude: Collection[Path] = (),
        turn: int | None = None,
        note: str = "",
    ) -> Checkpoint:
        """Record the files of `areas` now, as the next checkpoint, and return it."""
        ...

    def checkpoints(self) -> list[Checkpoint]:
        """Every checkpoint kept, oldest first."""
        ...

    def files(self, checkpoint: Checkpoint) -> dict[str, Files]:
        """The files of each recorded area of `checkpoint`, by the area's path."""
        ...

    def reader(self) -> AbstractContextManager[BlobReader]:
        """A function from a blob id to its bytes, valid inside the `with`."""
        ...

    def ignored(self, area: Path, paths: Sequence[str]) -> set[str]:
        """Those of `paths` (relative to `area`) that the area's .gitignore files ignore now
        (none for a store that reads no .gitignore)."""
        ...

    def drop(self, numbers: Collection[int]) -> None:
        """Forget these checkpoints and, now and then, the contents only they held."""
        ...


def store_dir(instance_root: Path) -> Path:
    return instance_root / CHECKPOINTS_DIR


def open_store(instance_root: Path, *, prefer: StoreKind | None = None) -> CheckpointStore:
    """The checkpoint store of the instance at `instance_root`: the one its folder already
    holds, else git where it is installed (or `prefer`), else copies."""
    from runtime.checkpoint.copystore import COPY_DIR, CopyStore
    from runtime.checkpoint.gitstore import GIT_DIR, GitStore

    root = store_dir(instance_root)
    if (root / GIT_DIR).exists():
        return GitStore(root)
    if (root / COPY_DIR).exists():
        return CopyStore(root)
    kind = prefer or ("git" if shutil.which("git") else "copy")
    return GitStore(root) if kind == "git" else CopyStore(root)


def find(store: CheckpointStore, number: int | None) -> Checkpoint:
    """Checkpoint `number`, or the newest one taken before a turn when None."""
    from runtime.errors import CheckpointNotFoundError

    kept = store.checkpoints()
    if not kept:
        raise CheckpointNotFoundError(
            "no checkpoints yet: one is taken before each turn that may write files",
            path=store.root,
        )
    if number is None:
        turns = [c for c in kept if c.kind == "turn"] or kept
        return turns[-1]
    for checkpoint in kept:
        if checkpoint.number == number:
            return checkpoint
    numbers = f"{kept[0].number}-{kept[-1].number}" if len(kept) > 1 else str(kept[0].number)
    raise CheckpointNotFoundError(
        f"no checkpoint {number}; the ones kept are {numbers} (`--list` shows them)",
        path=store.root,
        number=number,
    )


def take_and_prune(
    store: CheckpointStore,
    areas: Sequence[Path],
    *,
    settings: CheckpointSettings,
    exclude: Collection[Path] = (),
    turn: int | None = None,
    note: str = "",
    now: Callable[[], float] = time.time,
) -> Taken:
    """A checkpoint before a turn, then the ones past `keep` or `max_age_days` dropped."""
    if not areas:
        raise CheckpointError("no area to checkpoint", path=store.root)
    checkpoint = store.take(
        areas, kind="turn", settings=settings, exclude=exclude, turn=turn, note=note
    )
    drop = plan_prune(
        store.checkpoints(), keep=settings.keep, max_age_days=settings.max_age_days, now=now()
    )
    if drop:
        store.drop(drop)
    return Taken(checkpoint, tuple(drop))
