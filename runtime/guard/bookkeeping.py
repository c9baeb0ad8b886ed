"""What is bookkeeping, not progress: the files a panel keeps for itself, and timestamps. Pure.

A file is bookkeeping when its path (relative to the panel's working directory, or absolute)
matches one of `SentinelSettings.bookkeeping_files` (globs: `*.log`, `**/logs/**`,
`NOTES.md`, ...; the team's loop rules use the same list): a bare name matches that name in
any folder, and a pattern matches any tail of the path. Its changes are left out
of the state the sentinel compares (the touched files and the git digest alike).

A file's content is compared with its date-times and clock times masked (`content_digest`,
used for every content hash the world probe makes), so a file whose only change is a
timestamp ("updated 12:04:31") has not changed. Text files only, up to `MASKED_BYTES`;
anything else is hashed as it is. git itself compares bytes: a tracked file that a stamp
makes differ from its commit is a change once; later stamps alone are not.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from fnmatch import fnmatchcase
from functools import lru_cache

MASKED_BYTES = 1024 * 1024
_STAMP = re.compile(
    rb"\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?"
    rb"|\b\d{1,2}:\d{2}:\d{2}(\.\d+)?\b"
)


def is_bookkeeping(path: str, patterns: Iterable[str]) -> bool:
    """Does the path match one of the globs? Matched against the whole path and every tail
    of it (`logs/*` matches `/srv/app/logs/run.txt`; `*` crosses folders); a bare name matches
    that name in any folder, and `**/` in front matches no folder too. Answers are kept:
    the sentinel asks about every touched file before every call."""
    return _matches(path, tuple(patterns))


@lru_cache(maxsize=16_384)
def _matches(path: str, patterns: tuple[str, ...]) -> bool:
    name = path.rsplit("/", 1)[-1]
    for pattern in patterns:
        if fnmatchcase(path, pattern) or fnmatchcase(path, "*/" + pattern):
            return True
        if "/" not in pattern and fnmatchcase(name, pattern):
            return True
        if pattern.startswith("**/") and fnmatchcase(path, pattern[3:]):
            return True
    return False


def content_digest(data: bytes) -> str:
    """sha256 of the content with its timestamps masked (text up to MASKED_BYTES)."""
    if len(data) <= MASKED_BYTES and b"\0" not in data:
        data = _STAMP.sub(b"<time>", data)
    return hashlib.sha256(data).hexdigest()
