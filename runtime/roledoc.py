"""The role doc: read from disk on every turn, checked, and its last good text kept.

A role doc that goes missing, becomes a directory, turns binary or cannot be read does not
stop the session: the turn runs on the last text that was read successfully (or none), and
the problem is reported once each time it changes, not on every turn.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from runtime.errors import RoleDocError

MAX_ROLE_DOC_BYTES = 1024 * 1024


def read_role_doc(path: Path) -> str:
    """Read and check a role doc; RoleDocError says what is wrong with it."""
    if path.is_dir():
        raise RoleDocError("is a directory, not a role doc file", path=path)
    try:
        with path.open("rb") as fh:
            raw = fh.read(MAX_ROLE_DOC_BYTES + 1)
    except FileNotFoundError:
        raise RoleDocError("not found", path=path) from None
    except OSError as exc:
        raise RoleDocError(f"cannot be read ({exc.strerror})", path=path) from exc
    if len(raw) > MAX_ROLE_DOC_BYTES:
        raise RoleDocError("is larger than 1 MiB; a role doc should be prose", path=path)
    if b"\x00" in raw:
        raise RoleDocError("looks binary (contains NUL bytes); use a Markdown file", path=path)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RoleDocError(f"is not UTF-8 text (byte {exc.start})", path=path) from exc


@dataclass(frozen=True)
class RoleDocRead:
    text: str
    # A problem to report now (only when it differs from the last one reported), else None.
    warning: str | None


class RoleDocSource:
    """Re-reads one role doc each turn; remembers the last good text and the last warning."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._last_good = ""
        self._last_problem: str | None = None

    def read(self) -> RoleDocRead:
        if self.path is None:
            problem = "no role doc set; set one with `mnemara role --instance NAME --set PATH`"
        else:
            try:
                text = read_role_doc(self.path)
            except RoleDocError as exc:
                problem = f"role doc {exc}; using the last good text"
            else:
                self._last_good = text
                self._last_problem = None
                return RoleDocRead(text, None)
        fresh = problem != self._last_problem
        self._last_problem = problem
        return RoleDocRead(self._last_good, problem if fresh else None)
