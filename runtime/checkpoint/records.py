"""The checkpoint records of one store: `<store>/meta/<number>.json`, one per checkpoint.

A record is written last, after the store holds the checkpoint's files, so a record names a
complete checkpoint; one left unwritten by a crash leaves files that the next prune clears.
Records are our own files in MNEMARA_HOME (out of the panels' reach), but they are read with
the same caps as any JSON, and one that cannot be read is set aside (`unreadable`), never a
reason to stop taking checkpoints.

No fsync: a record lost to a power cut loses one checkpoint from the list, and the turn that
follows takes the next one. A turn waits for this write, so it is kept cheap.
"""

from __future__ import annotations

import functools
import json
import os
import tempfile
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import asdict
from pathlib import Path

from pydantic import TypeAdapter, ValidationError

from runtime.checkpoint.model import AreaRecord, Checkpoint, Kind, StoreKind
from sqlitekit.jsonload import load_json

FORMAT = 1
MAX_RECORD_BYTES = 4 * 1024 * 1024


@functools.cache
def _adapter() -> TypeAdapter[Checkpoint]:
    return TypeAdapter(Checkpoint)


def write_private(path: Path, data: bytes) -> None:
    """Write `data` to `path` through a temporary file and a rename (no fsync)."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class Records:
    """The records in `folder` (created on the first write)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.unreadable: list[Path] = []
        # The records as last read, and the folder's change time then: a turn's checkpoint
        # reads them twice (the next number, the prune), and a host keeps one `Records`.
        self._cached: tuple[int, list[Checkpoint]] | None = None

    def path(self, number: int) -> Path:
        return self.folder / f"{number:08d}.json"

    def record(
        self,
        number: int,
        started: float,
        *,
        store: StoreKind,
        areas: Sequence[AreaRecord],
        kind: Kind,
        exclude: Collection[Path],
        turn: int | None,
        note: str,
    ) -> Checkpoint:
        """The checkpoint a store has just taken (`started`: its perf_counter at the start),
        written down."""
        checkpoint = Checkpoint(
            number=number,
            at=time.time(),
            kind=kind,
            store=store,
            areas=tuple(areas),
            turn=turn,
            note=note,
            ms=round((time.perf_counter() - started) * 1000, 1),
            exclude=tuple(sorted(str(p) for p in exclude)),
        )
        self.write(checkpoint)
        return checkpoint

    def write(self, checkpoint: Checkpoint) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        data = {"format": FORMAT, **asdict(checkpoint)}
        write_private(self.path(checkpoint.number), json.dumps(data).encode())
        self._update(lambda kept: [*(c for c in kept if c.number != checkpoint.number),
                                   checkpoint])  # fmt: skip

    def read_all(self) -> list[Checkpoint]:
        """Every readable record, oldest first; the others are listed in `unreadable`."""
        stamp = self._stamp()
        if self._cached is not None and self._cached[0] == stamp:
            return list(self._cached[1])
        self.unreadable = []
        if stamp is None:
            return []
        found: list[Checkpoint] = []
        for path in sorted(self.folder.glob("*.json")):
            checkpoint = self._read(path)
            if checkpoint is None:
                self.unreadable.append(path)
            else:
                found.append(checkpoint)
        found.sort(key=lambda c: c.number)
        self._cached = (stamp, found)
        return list(found)

    def _stamp(self) -> int | None:
        try:
            return os.stat(self.folder).st_mtime_ns
        except FileNotFoundError:
            return None

    def _update(self, change: Callable[[list[Checkpoint]], list[Checkpoint]]) -> None:
        """Apply our own write to the cache, when the cache was current before it."""
        if self._cached is None:
            return
        stamp = self._stamp()
        kept = sorted(change(self._cached[1]), key=lambda c: c.number)
        self._cached = None if stamp is None else (stamp, kept)

    def _read(self, path: Path) -> Checkpoint | None:
        try:
            data = load_json(path.read_bytes(), max_bytes=MAX_RECORD_BYTES)
        except (OSError, ValueError):
            return None
        if not isinstance(data, dict) or data.pop("format", None) != FORMAT:
            return None
        try:
            checkpoint = _adapter().validate_python(data)
        except ValidationError:
            return None
        return checkpoint if path.name == self.path(checkpoint.number).name else None

    def remove(self, numbers: Collection[int]) -> None:
        for number in numbers:
            self.path(number).unlink(missing_ok=True)
        gone = set(numbers)
        self._update(lambda kept: [c for c in kept if c.number not in gone])

    def next_number(self) -> int:
        """One more than the highest number kept. (A checkpoint whose record a crash left
        unwritten is not counted: its number is used again, its files overwritten; nor is an
        unreadable record's number ever used again.)"""
        numbers = [c.number for c in self.read_all()]
        numbers += [int(p.stem) for p in self.unreadable if p.stem.isdigit()]
        return max(numbers, default=0) + 1
