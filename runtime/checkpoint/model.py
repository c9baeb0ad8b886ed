"""The values of the checkpoint store: a file's entry, an area's record, a checkpoint, settings.

A checkpoint is the state of a panel's writable areas (its working directory and the team's
`writable` directories) just before one of its turns, or just before a rewind. For each area
it holds every file that is not ignored: its path relative to the area, its kind
(`Entry.mode`, git's numbers: a plain file, an executable file, a symbolic link) and the
store's id of its content (`Entry.blob`). Two entries with the same mode and blob are the
same file, in the same store.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

FILE = 0o100644
EXECUTABLE = 0o100755
SYMLINK = 0o120000
MODES = frozenset({FILE, EXECUTABLE, SYMLINK})

Kind = Literal["turn", "rewind"]
TOO_MANY = "too many files"  # how `AreaRecord.skipped` starts for an area over max_files
StoreKind = Literal["git", "copy"]


@dataclass(frozen=True)
class Entry:
    """One file of an area: its kind (FILE, EXECUTABLE, SYMLINK) and content id."""

    mode: int
    blob: str


Files = Mapping[str, Entry]  # path relative to the area ("src/a.py") -> entry
BlobReader = Callable[[str], bytes]  # a blob id -> its bytes (a store's `reader()`)


def area_key(area: Path) -> str:
    """A short, stable name for an area: its private index and its refs or manifests."""
    return hashlib.sha1(str(area).encode(), usedforsecurity=False).hexdigest()[:16]


@dataclass(frozen=True)
class Changes:
    """What changed in an area since the checkpoint before (the work of the turn between
    them, and anything else that wrote there): counts and a few of the paths."""

    added: int = 0
    modified: int = 0
    removed: int = 0
    sample: tuple[str, ...] = ()

    @property
    def total(self) -> int:
        return self.added + self.modified + self.removed

    def describe(self) -> str:
        counts = ((self.added, "added"), (self.modified, "changed"), (self.removed, "removed"))
        parts = [f"{n} {what}" for n, what in counts if n]
        return ", ".join(parts) or "no change"


@dataclass(frozen=True)
class AreaRecord:
    """One area in a checkpoint. `tree` is the store's id of the area's file list; `capped`
    the files left out for their size (a rewind leaves them as they are); `skipped` says why
    the area was not recorded at all (then `tree` is empty and a rewind leaves it alone)."""

    path: str
    key: str
    tree: str = ""
    files: int = 0
    changes: Changes = field(default_factory=Changes)
    capped: tuple[str, ...] = ()
    skipped: str = ""


@dataclass(frozen=True)
class Checkpoint:
    """One checkpoint. `number` counts a panel's checkpoints over all its host runs; `turn`
    is the host's number of the turn it precedes (None before a rewind); `note` the turn's
    input, shortened, or what the rewind was; `ms` what taking it cost."""

    number: int
    at: float
    kind: Kind
    store: StoreKind
    areas: tuple[AreaRecord, ...]
    turn: int | None = None
    note: str = ""
    ms: float = 0.0
    # What it left out (mnemara's state, secrets): a rewind's own checkpoint leaves out the
    # same, so a rewind never takes them for files made since.
    exclude: tuple[str, ...] = ()

    def recorded(self) -> tuple[AreaRecord, ...]:
        """The areas whose files it holds."""
        return tuple(a for a in self.areas if not a.skipped)


@dataclass(frozen=True)
class CheckpointSettings:
    """How checkpoints are taken and kept (`[team.checkpoints]` in a team file).

    `keep`: the newest checkpoints kept per panel; `max_age_days`: older ones are dropped
    (the newest one is always kept); `max_file_mb`: a file bigger than this is left out of
    a checkpoint, and named in the event log; `max_files`: an area with more new or changed
    files than this at once is not checkpointed (a home directory taken for a working
    directory), and the event log says so; `required`: a checkpoint that cannot be taken
    halts the panel before its turn instead of letting the turn run without one."""

    enabled: bool = True
    keep: int = 50
    max_age_days: float = 14.0
    max_file_mb: float = 20.0
    max_files: int = 20_000
    required: bool = False

    @property
    def max_file_bytes(self) -> int:
        return int(self.max_file_mb * 1024 * 1024)


@dataclass(frozen=True)
class Taken:
    """A checkpoint just taken, and what the host should say about it."""

    checkpoint: Checkpoint
    dropped: tuple[int, ...] = ()  # numbers pruned after it
