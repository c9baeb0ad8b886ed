"""The records of `git status --porcelain=v2 -z`, split by path and made again without git.

Pure (but for reading a file's blob id): gitwatch.py keeps the state current with them.
`split_status` and `join_status` take the output apart and put it together in git's order;
`record_now` is the record git would print for one path now, from its record as last made or
its index entry and the file as it is, or what is needed first (the index, whether the path is
ignored, or git itself when the record is one this module does not make).
"""

from __future__ import annotations

import hashlib
import os
import stat
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

_REGULAR_MODES = (b"100644", b"100755")
_FIELDS = {b"1": 8, b"2": 9, b"u": 10, b"?": 1}  # spaces before a record's path


class Need(Enum):
    """Why a path's record cannot be made yet."""

    INDEX = "the index entries"
    IGNORE = "whether it is ignored"
    GIT = "git itself"


Records = dict[bytes, bytes]  # path -> its record in `git status --porcelain=v2 -z`
Made = bytes | Need | None  # a path's record now (None: not listed), or what it needs first


def split_status(output: bytes) -> tuple[bytes, Records] | None:
    """The status output as (header, records by path); None for a form this module does not
    rebuild (a path listed twice: deleted in the index and untracked in the work tree)."""
    fields = output.split(b"\0")
    if fields.pop() != b"":
        return None
    header, records = b"", {}
    i = 0
    while i < len(fields):
        record = fields[i]
        i += 1
        if record[:1] == b"#":
            header += record + b"\0"
            continue
        spaces = _FIELDS.get(record[:1])
        parts = record.split(b" ", spaces or 0)
        if spaces is None or len(parts) != spaces + 1 or parts[-1] in records:
            return None
        if record[:1] == b"2":  # the original path follows in a field of its own
            record += b"\0" + (fields[i] if i < len(fields) else b"")
            i += 1
        records[parts[-1]] = record
    return header, records


def join_status(header: bytes, records: Records) -> bytes:
    """The status output again: git lists changes, then untracked files, by path bytes."""
    changes = sorted(p for p, r in records.items() if r[:1] != b"?")
    untracked = sorted(p for p, r in records.items() if r[:1] == b"?")
    return header + b"".join(records[p] + b"\0" for p in (*changes, *untracked))


@dataclass(frozen=True)
class FileNow:
    """A work-tree file as it is now (None when gone)."""

    path: Path
    mode: int

    def blob_id(self, hex_length: int) -> bytes:
        """Its git object id (sha1, or sha256 in a sha256 repository): git compares the
        same bytes when no filter applies."""
        digest = hashlib.sha1(usedforsecurity=False) if hex_length == 40 else hashlib.sha256()
        with open(self.path, "rb") as fh:
            digest.update(b"blob %d\0" % os.fstat(fh.fileno()).st_size)
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                digest.update(chunk)
        return digest.hexdigest().encode()


def record_now(
    path: bytes,
    record: bytes | None,
    entry: bytes | Need | None,
    now: FileNow | None,
    ignored: bool | None,
    *,
    exact_blobs: bool,
) -> bytes | Need | None:
    """The record git would print for `path` now (None: not listed), from its record as
    last made (or else its index entry: "tag mode oid stage"), or what is needed first.
    `exact_blobs`: no filter or mode rule makes git compare other than blob ids. Pure but
    for reading the file's blob id."""
    if now is not None and stat.S_ISDIR(now.mode) and record is None and entry is None:
        return None  # a directory: its files come through their own events
    if now is not None and not stat.S_ISREG(now.mode):
        return Need.GIT  # a symlink, a file become a directory...
    kind = record[:1] if record is not None else None
    if record is not None and kind == b"?":
        return None if now is None else record
    if record is not None and kind == b"1":
        _, xy, sub, head_mode, index_mode, _, head_id, index_id, _ = record.split(b" ", 8)
    elif record is not None:
        return Need.GIT  # a rename or an unmerged path
    elif isinstance(entry, Need):
        return entry
    elif entry is None:
        if now is None or ignored is True:
            return None
        return Need.IGNORE if ignored is None else b"? " + path
    else:
        tag, index_mode, index_id, stage = entry.split(b" ")
        if tag != b"H" or stage != b"0":
            return Need.GIT  # skip-worktree, assume-unchanged or a conflict stage
        xy, sub, head_mode, head_id = b"..", b"N...", index_mode, index_id
    staged = xy[:1]
    if not exact_blobs or sub != b"N..." or staged == b"D" or xy[1:] not in (b".", b"M", b"D"):
        return Need.GIT
    if index_mode not in _REGULAR_MODES:
        return Need.GIT
    if now is None:
        work, work_mode = b"D", b"000000"
    else:
        work_mode = _REGULAR_MODES[1] if now.mode & stat.S_IXUSR else _REGULAR_MODES[0]
        try:
            same = work_mode == index_mode and now.blob_id(len(index_id)) == index_id
        except OSError:
            return Need.GIT  # gone or unreadable since its lstat: git says which
        work = b"." if same else b"M"
    if staged + work == b"..":
        return None
    fields = (b"1", staged + work, sub, head_mode, index_mode, work_mode, head_id, index_id, path)
    return b" ".join(fields)


def look(top: Path, path: bytes) -> FileNow | None:
    full = top / os.fsdecode(path)
    try:
        return FileNow(full, full.lstat().st_mode)
    except OSError:  # gone, or a parent is now a file
        return None
