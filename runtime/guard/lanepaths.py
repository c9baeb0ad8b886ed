"""Where a path really is, and whether a lane's globs cover it. Pure but for path resolution.

A target is judged where the write or read would land: `~` expanded, made absolute against
the working directory, `..` collapsed and symlinks followed (a file that does not exist yet
is judged by its resolved parent), as runtime/policy/paths.py resolves paths. So a path
that leaves the lane through `..` or through a symlink is outside it, whatever it looks like.

Globs: `*` and `?` stay inside one path component, `[...]` is a character class, a `**`
component matches any number of components (none included, so `src/**` covers `src`
itself), and an entry ending in `/` means the tree under it. A relative glob is taken under
the working directory's real path; an absolute one (or `~/...`) under its literal base
directory's real path, so `/tmp/**` still matches where /tmp is a symlink.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path

from runtime.policy.context import real
from runtime.policy.paths import HARMLESS_DEVICES, expand_home, glob_base


def resolve_target(raw: str, cwd: Path, home: Path) -> Path | None:
    """The real absolute path `raw` names from `cwd`; None when it cannot be resolved (empty,
    a NUL byte, `~user`, an undecodable name)."""
    if not raw or "\x00" in raw:
        return None
    expanded = expand_home(raw, home)
    if expanded is None:
        return None
    lexical = Path(os.path.normpath(Path(cwd, expanded)))
    if lexical in HARMLESS_DEVICES:
        return lexical
    try:
        return real(lexical)
    except (OSError, ValueError):
        return None


def covered(path: Path, globs: Sequence[str], cwd: Path, home: Path) -> bool:
    """Whether any of `globs` matches the resolved `path`."""
    if path in HARMLESS_DEVICES:
        return True  # /dev/null and the standard streams are nobody's file
    text = str(path)
    return any(_compiled(g, str(cwd), str(home)).fullmatch(text) for g in globs)


@lru_cache(maxsize=1024)
def _compiled(glob: str, cwd: str, home: str) -> re.Pattern[str]:
    return re.compile(_regex(absolute_glob(glob, Path(cwd), Path(home))))


def absolute_glob(glob: str, cwd: Path, home: Path) -> str:
    """`glob` as an absolute pattern: its literal base resolved, its wildcard part as written."""
    if glob.endswith("/"):
        glob += "**"
    expanded = expand_home(glob, home)
    if expanded is None:
        return "\x00"  # `~user/...` names someone else's home: matches nothing
    if not os.path.isabs(expanded):
        return os.path.normpath(os.path.join(real(cwd), expanded))
    base, rest = glob_base(expanded)
    if not rest:  # no wildcard: a file named outright, judged by its resolved parent
        lexical = Path(os.path.normpath(expanded))
        return str(real(lexical.parent) / lexical.name)
    return os.path.join(str(real(Path(os.path.normpath(base)))), *rest)


def _regex(pattern: str) -> str:
    out = []
    for part in pattern.split("/"):
        if not part:
            continue
        if part == "**":
            out.append("(?:/[^/]+)*")
        else:
            out.append("/" + _component(part))
    return "".join(out) or "/"


def _component(part: str) -> str:
    """One path component of a glob as a regex that never crosses a `/`."""
    out, i = [], 0
    while i < len(part):
        ch = part[i]
        if ch == "*":
            out.append("[^/]*")
        elif ch == "?":
            out.append("[^/]")
        elif ch == "[":
            end = part.find("]", i + 2 if part[i + 1 : i + 2] in ("!", "^", "]") else i + 1)
            if end < 0:
                out.append(re.escape(ch))
            else:
                body = part[i + 1 : end]
                negate = body[:1] in ("!", "^")
                body = body[1:] if negate else body
                escaped = body.replace("\\", "\\\\").replace("[", "\\[")
                out.append(f"(?![/])[{'^' if negate else ''}{escaped}]")
                i = end
        else:
            out.append(re.escape(ch))
        i += 1
    return "".join(out)
