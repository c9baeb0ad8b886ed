"""Finding the line of a TOML value from a validation error's location, for error messages.

`tomllib` keeps no positions, so this scans the text: table headers (`[team]`,
`[[panels]]`, `[panels.budget]`) set the current path, array-of-tables headers count their
index, and `key = value` lines add the key. A location is matched to the deepest line that
has it as a prefix; a value in an inline table reports the line of its key. Pure.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

_HEADER = re.compile(r"^\s*(\[\[?)\s*([A-Za-z0-9_.\-\" ]+?)\s*\]\]?\s*(#.*)?$")
_KEY = re.compile(r"^\s*([A-Za-z0-9_\-]+)\s*=")

Loc = tuple[str | int, ...]


def index_lines(text: str) -> list[tuple[Loc, int]]:
    """Every header and key line of `text` with its full location, in file order."""
    counts: dict[tuple[str | int, ...], int] = {}
    current: Loc = ()
    found: list[tuple[Loc, int]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        header = _HEADER.match(line)
        if header:
            parts = [p.strip().strip('"') for p in header.group(2).split(".")]
            current = _resolve(parts, current, counts, array=header.group(1) == "[[")
            found.append((current, number))
            continue
        key = _KEY.match(line)
        if key:
            found.append(((*current, key.group(1)), number))
    return found


def _resolve(parts: Sequence[str], current: Loc, counts: dict[Loc, int], *, array: bool) -> Loc:
    """The location of a header: array tables named earlier keep their latest index."""
    path: list[str | int] = []
    for i, part in enumerate(parts):
        path.append(part)
        last = i == len(parts) - 1
        key = tuple(path)
        if last and array:
            counts[key] = counts.get(key, -1) + 1
            path.append(counts[key])
        elif key in counts:
            path.append(counts[key])
    return tuple(path)


def line_of(text: str, loc: Loc) -> int | None:
    """The line that best matches `loc` (1-based), or None when nothing does."""
    best: tuple[int, int] | None = None  # (matched length, line)
    for where, number in index_lines(text):
        length = _common(where, loc)
        if length == len(where) and (best is None or length > best[0]):
            best = (length, number)
    return None if best is None or best[0] == 0 else best[1]


def _common(a: Loc, b: Loc) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def dotted(loc: Loc) -> str:
    """`panels[1].budget.max_session_usd` for ("panels", 1, "budget", "max_session_usd")."""
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out
