"""`CopyStore`: checkpoints as copies, for machines without git.

Layout, under `<instance>/checkpoints/`:

    files/objects/<2 hex>/<62 hex>     each content once, named by its sha256
    files/manifests/<n>-<area key>.json  checkpoint n's file list of that area
    meta/<n>.json                      checkpoint n's record (records.py)

A checkpoint walks the area (never following a symlink) and copies only what changed since
the last one: a file whose size, modification time, inode and change time match the last
manifest keeps its content id unread, unless it was modified within two seconds of that
walk (a write in the same clock tick would not show; git's racy-clean rule). Every file is
kept except folders named `.git` and the excluded paths; this store does not read
.gitignore files (the git store does), so a build folder is copied too: install git for
big working directories. Files over `max_file_mb` are left out and named.

Dropping a checkpoint deletes its manifests; contents no manifest names are deleted once
enough manifests have gone (`SWEEP_EVERY`), since that walk reads every manifest kept.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import time
from collections.abc import Collection, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from runtime.checkpoint.model import (
    EXECUTABLE,
    FILE,
    SYMLINK,
    TOO_MANY,
    AreaRecord,
    BlobReader,
    Checkpoint,
    CheckpointSettings,
    Entry,
    Files,
    Kind,
    StoreKind,
    area_key,
)
from runtime.checkpoint.plan import changes_between
from runtime.checkpoint.records import Records, write_private
from runtime.errors import CheckpointError
from sqlitekit.jsonload import load_json

COPY_DIR = "files"
MANIFEST_FORMAT = 1
MAX_MANIFEST_BYTES = 256 * 1024 * 1024
RACY_NS = 2_000_000_000
SWEEP_EVERY = 20  # manifests dropped between two sweeps of unused contents
CHUNK = 1024 * 1024

# path -> [mode, blob, size, mtime_ns, inode, ctime_ns]
Stats = dict[str, list[Any]]


class CopyStore:
    kind: StoreKind = "copy"

    def __init__(self, root: Path) -> None:
        self.root = root
        self.base = root / COPY_DIR
        self.objects = self.base / "objects"
        self.manifests = self.base / "manifests"
        self.records = Records(root / "meta")
        # The last walk of each area, by key: (its start in ns, its stats).
        self._last: dict[str, tuple[int, Stats]] = {}
        self._dropped = 0

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
        started = time.perf_counter()
        self.objects.mkdir(parents=True, exist_ok=True)
        self.manifests.mkdir(parents=True, exist_ok=True)
        os.chmod(self.root, 0o700)
        number = self.records.next_number()
        recorded = tuple(self._take_area(a, number, settings, exclude) for a in areas)
        checkpoint = self.records.record(
            number, started, store="copy", areas=recorded, kind=kind, exclude=exclude,
            turn=turn, note=note,
        )  # fmt: skip
        return checkpoint

    def _take_area(
        self, area: Path, number: int, settings: CheckpointSettings, exclude: Collection[Path]
    ) -> AreaRecord:
        key = area_key(area)
        if not area.is_dir():
            return AreaRecord(str(area), key, skipped="not a directory now")
        walked_at = time.time_ns()
        last_at, last = self._last.get(key) or self._load_last(key)
        skip = {str(p) for p in exclude}
        stats: Stats = {}
        capped: list[str] = []
        for path, st in _walk(area, skip):
            if len(stats) >= settings.max_files:
                return AreaRecord(str(area), key, skipped=(
                    f"{TOO_MANY}: more than max_files ({settings.max_files}); is this the "
                    "right working directory?"))  # fmt: skip
            if stat.S_ISREG(st.st_mode) and st.st_size > settings.max_file_bytes:
                capped.append(path)
                continue
            stats[path] = self._entry(area, path, st, last.get(path), last_at)
        manifest = {"format": MANIFEST_FORMAT, "walked_at": walked_at, "files": stats}
        body = json.dumps(manifest, sort_keys=True).encode()
        tree = hashlib.sha256(json.dumps(_entries(stats), sort_keys=True).encode()).hexdigest()
        write_private(self.manifests / f"{number}-{key}.json", body)
        before = _files(last) if last else None
        changes = changes_between(before, _files(stats))
        self._last[key] = (walked_at, stats)
        return AreaRecord(str(area), key, tree=tree, files=len(stats), changes=changes,
                          capped=tuple(sorted(capped)))  # fmt: skip

    def _entry(
        self, area: Path, path: str, st: os.stat_result, was: list[Any] | None, last_at: int
    ) -> list[Any]:
        mode = _mode(st)
        same = (
            was is not None
            and was[0] == mode
            and was[2:] == [st.st_size, st.st_mtime_ns, st.st_ino, st.st_ctime_ns]
            and st.st_mtime_ns + RACY_NS < last_at
        )
        if same:
            assert was is not None
            blob = str(was[1])
        elif mode == SYMLINK:
            blob = self._keep(os.fsencode(os.readlink(area / path)))
        else:
            blob = self._keep_file(area / path)
        return [mode, blob, st.st_size, st.st_mtime_ns, st.st_ino, st.st_ctime_ns]

    def _keep(self, data: bytes) -> str:
        blob = hashlib.sha256(data).hexdigest()
        target = self._object(blob)
        if not target.exists():
            target.parent.mkdir(exist_ok=True)
            write_private(target, data)
        return blob

    def _keep_file(self, path: Path) -> str:
        digest = hashlib.sha256()
        chunks = []
        with open(path, "rb") as source:
            while chunk := source.read(CHUNK):
                digest.update(chunk)
                chunks.append(chunk)
        blob = digest.hexdigest()
        target = self._object(blob)
        if not target.exists():
            target.parent.mkdir(exist_ok=True)
            write_private(target, b"".join(chunks))
        return blob

    def _object(self, blob: str) -> Path:
        return self.objects / blob[:2] / blob[2:]

    def _load_last(self, key: str) -> tuple[int, Stats]:
        """The newest manifest of the area on disk (the start of a host's life)."""
        for checkpoint in reversed(self.records.read_all()):
            for area in checkpoint.recorded():
                if area.key == key:
                    manifest = self._manifest(checkpoint.number, key)
                    return int(manifest.get("walked_at", 0)), manifest["files"]
        return 0, {}

    def _manifest(self, number: int, key: str) -> dict[str, Any]:
        path = self.manifests / f"{number}-{key}.json"
        try:
            data = load_json(path.read_bytes(), max_bytes=MAX_MANIFEST_BYTES)
        except (OSError, ValueError) as exc:
            raise CheckpointError(f"cannot read checkpoint manifest {path}: {exc}",
                                  path=path) from None  # fmt: skip
        if (
            not isinstance(data, dict)
            or data.get("format") != MANIFEST_FORMAT
            or not isinstance(data.get("files"), dict)
        ):
            raise CheckpointError(f"checkpoint manifest {path} is not one of ours", path=path)
        return data

    # -- reading -------------------------------------------------------------------------------

    def checkpoints(self) -> list[Checkpoint]:
        return self.records.read_all()

    def files(self, checkpoint: Checkpoint) -> dict[str, Files]:
        return {
            area.path: _files(self._manifest(checkpoint.number, area.key)["files"])
            for area in checkpoint.recorded()
        }

    @contextmanager
    def reader(self) -> Iterator[BlobReader]:
        def read(blob: str) -> bytes:
            try:
                return self._object(blob).read_bytes()
            except OSError:
                raise CheckpointError(f"the checkpoint store {self.base} lacks content {blob}; "
                                      "it may be damaged", path=self.base) from None  # fmt: skip

        yield read

    def ignored(self, area: Path, paths: Sequence[str]) -> set[str]:
        return set()  # this store reads no .gitignore

    # -- dropping ------------------------------------------------------------------------------

    def drop(self, numbers: Collection[int]) -> None:
        if not numbers:
            return
        self.records.remove(numbers)
        gone = set(numbers)
        for path in self.manifests.glob("*.json"):
            head = path.stem.split("-", 1)[0]
            if head.isdigit() and int(head) in gone:
                path.unlink(missing_ok=True)
                self._dropped += 1
        if self._dropped >= SWEEP_EVERY:
            self._sweep()
            self._dropped = 0

    def _sweep(self) -> None:
        """Delete the contents no kept manifest names."""
        used: set[str] = set()
        for path in self.manifests.glob("*.json"):
            head, _, key = path.stem.partition("-")
            if head.isdigit():
                used.update(str(v[1]) for v in self._manifest(int(head), key)["files"].values())
        for folder in self.objects.iterdir():
            for item in folder.iterdir():
                if folder.name + item.name not in used:
                    item.unlink(missing_ok=True)


def _walk(area: Path, skip: set[str]) -> Iterator[tuple[str, os.stat_result]]:
    """(relative path, lstat) of every file and symlink under `area`, never entering a
    symlinked folder, a `.git` or an excluded path."""
    stack = [(area, "")]
    while stack:
        folder, prefix = stack.pop()
        try:
            entries = list(os.scandir(folder))
        except (FileNotFoundError, NotADirectoryError, PermissionError):
            continue
        for entry in entries:
            if entry.name == ".git" or entry.path in skip:
                continue
            rel = f"{prefix}{entry.name}"
            st = entry.stat(follow_symlinks=False)
            if stat.S_ISDIR(st.st_mode):
                stack.append((Path(entry.path), f"{rel}/"))
            elif stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode):
                yield rel, st


def _mode(st: os.stat_result) -> int:
    if stat.S_ISLNK(st.st_mode):
        return SYMLINK
    return EXECUTABLE if st.st_mode & stat.S_IXUSR else FILE  # git's rule


def _entries(stats: Stats) -> dict[str, list[Any]]:
    return {path: [v[0], v[1]] for path, v in stats.items()}


def _files(stats: Stats) -> dict[str, Entry]:
    return {path: Entry(int(v[0]), str(v[1])) for path, v in stats.items()}
