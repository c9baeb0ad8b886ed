"""The role doc: read from disk on every turn, checked, and its last good text kept.

A role doc that goes missing, becomes a directory, turns binary or cannot be read does not
stop the session: the turn runs on the last text that was read successfully (or none), and
the problem is reported once each time it changes, not on every turn.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path

from runtime.errors import RoleDocError
from runtime.instance.regular_file import FileTooLargeError, NotRegularFileError, read_regular_file
from runtime.policy.display import is_hidden_character

MAX_ROLE_DOC_BYTES = 1024 * 1024
_BOM = "\ufeff"


# C0 and C1 controls but tab and newline, and a carriage return not followed by a newline.
_CONTROL = re.compile("[\x00-\x08\x0b-\x0c\x0e-\x1f\x7f-\x9f]|\r(?!\n)")


def role_text_problem(raw: bytes) -> str | None:
    """Why these bytes cannot be a role doc, or None; shared by local files and downloads.

    A role doc is sent to the model as its instructions and shown to the operator, so it must
    be UTF-8 text with no NUL and no control character but tab, newline and the carriage
    return of a CRLF pair: a control character can rewrite what a terminal shows (#35). A
    leading byte-order mark is allowed. Invisible characters (bidi controls, zero-width
    characters) are not refused: emoji sequences and some scripts need them. `role_text_flags`
    names them, for the operator to see escaped when a role doc is set.
    """
    nul = raw.find(b"\x00")
    if nul >= 0:
        return f"looks binary (a NUL byte at byte {nul}); a role doc is a Markdown text file"
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return f"is not UTF-8 text (invalid byte at byte {exc.start}); save it as UTF-8"
    found = _CONTROL.search(text)
    if found is None:
        return None
    where = _where(text, found.start())
    why = "control characters can rewrite what a terminal shows"
    return f"contains the control character {where}; {why}: remove it"


def role_text_flags(text: str, limit: int = 5) -> list[str]:
    """The invisible characters in `text` (a BOM first excepted), each as "U+202E
    (RIGHT-TO-LEFT OVERRIDE) on line 3 (byte 10)", at most `limit` of them."""
    found: list[str] = []
    for index, char in enumerate(text):
        if char in "\t\n\r" or (char == _BOM and index == 0) or not is_hidden_character(char):
            continue
        found.append(_where(text, index))
        if len(found) == limit:
            break
    return found


def _where(text: str, index: int) -> str:
    char = text[index]
    name = unicodedata.name(char, "")
    shown = f"U+{ord(char):04X}" + (f" ({name})" if name else "")
    line = text.count("\n", 0, index) + 1
    offset = len(text[:index].encode("utf-8"))
    return f"{shown} on line {line} (byte {offset})"


def decode_role_text(raw: bytes) -> str:
    """The text of bytes `role_text_problem` accepted, without a leading byte-order mark."""
    return raw.decode("utf-8").removeprefix(_BOM)


def read_role_doc(path: Path) -> str:
    """Read and check a role doc; RoleDocError says what is wrong with it.

    Opened by `runtime.instance.regular_file`: a FIFO, device or socket put where the role doc
    was is refused at once, never waited on (#24), and nothing past 1 MiB is read.
    """
    try:
        raw = read_regular_file(path, MAX_ROLE_DOC_BYTES)
    except FileNotFoundError:
        raise RoleDocError("not found", path=path) from None
    except NotRegularFileError as exc:
        raise RoleDocError(f"{exc.strerror}; a role doc is a Markdown file", path=path) from None
    except FileTooLargeError:
        raise RoleDocError("is larger than 1 MiB; a role doc should be prose", path=path) from None
    except OSError as exc:
        raise RoleDocError(f"cannot be read ({exc.strerror or exc})", path=path) from exc
    problem = role_text_problem(raw)
    if problem is not None:
        raise RoleDocError(problem, path=path)
    return decode_role_text(raw)


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
