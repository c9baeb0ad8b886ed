"""What a write target is on disk, beyond its names: a hard link, or a bus peerbus has opened.

Both are asked of a path only when a tool would write it, since each costs a system call.

A hard link (#20) is one file under several names. Writing it through a harmless name
changes it under every other name too, perhaps one outside the allowed directories or a
protected one, and no check on the name can see that: such a write asks.

A bus (#39) need not be the one this team names: another team's foreign bus can sit anywhere.
peerbus leaves a mark beside every database it has opened, `<db>.writers` (the writers'
gate) or, for a foreign table, the `<db>.peerbus` sidecar. A database with either mark is a
bus, and forging a row in it forges a message, so writing it (or a sibling) is denied.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from runtime.policy.stores import DATABASE_SIBLINGS

# Longest first, so `x.peerbus-wal` is taken as x's sibling, not as `x.peerbus`'s `-wal`;
# both are tried anyway, since either base may be the one with the mark.
_SUFFIXES = sorted((s for s in DATABASE_SIBLINGS if s), key=len, reverse=True)
_MARKS = (".peerbus", ".writers")


def hard_links(path: Path) -> int:
    """How many names the regular file at `path` has; 0 when it is missing or not one."""
    try:
        info = os.lstat(path)
    except (OSError, ValueError):
        return 0
    return info.st_nlink if stat.S_ISREG(info.st_mode) else 0


def bus_mark(path: Path) -> Path | None:
    """The peerbus file that marks `path` as (a sibling of) a bus database, or None."""
    name = path.name
    bases = [name] + [name[: -len(s)] for s in _SUFFIXES if name.endswith(s) and len(name) > len(s)]
    for base in dict.fromkeys(bases):
        for mark in _MARKS:
            candidate = path.with_name(base + mark)
            if os.path.lexists(candidate):
                return candidate
    return None


def is_socket(path: Path) -> bool:
    """True when `path` is a Unix socket (bash.py: an argument that is one asks, #25)."""
    try:
        return stat.S_ISSOCK(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False
