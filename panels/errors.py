"""The application's exceptions: one root, each class raised in one kind of situation.

MnemaraError (runtime/errors.py)
└── PanelsError                   root of everything `panels` raises on purpose
    ├── HostError                 a team's host cannot be started, found or reached as asked
    │   ├── HostRunningError      `up` while a host of the team is already running
    │   └── NoHostError           a viewer command names a team whose host never ran or is gone
    ├── HostDbError               host.sqlite is missing, from a newer mnemara, or not a database
    ├── TeamFileError             a team file cannot be read or holds invalid values (also a
    │                             ConfigError; carries every `Problem` found)
    ├── VerbError                 a verb is unknown, or an argument is missing or invalid (also
    │                             a ValueError); the host refuses it, the CLI exits 2
    ├── VerbRefusedError          inside the host's dispatcher only: a verb that cannot apply
    │                             now; it becomes a failed outcome (panels/host/control/dispatch.py)
    ├── ToolRefused               inside `mnemara mcp` only: a tool call refused (unknown panel,
    │                             oversized text, ...); it becomes the call's error result
    │                             (panels/mcp/rules.py)
    └── WindowVerbError           a window verb cannot be applied to the panel as given

The classes are defined here once (VerbRefusedError, which never leaves the dispatcher, and
ToolRefused, which never leaves the MCP server, are defined there); `panels.host.errors`,
`panels.team.errors`, `panels.hostdb` and
`panels.host.turns.window` re-export the ones they raise. Every error carries
the fields that locate it and a message that says what to do next; the CLI maps the classes
to exit codes (panels/cli/errors.py, the table in README.md).

Not errors: a verb the host applies but cannot carry out (a panel already halted, a question
already answered) is a failed outcome in the control table, not an exception; a panel the host
gives up on is an event (`panel_given_up`), and `mnemara run` exits non-zero.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from runtime.errors import ConfigError, MnemaraError


class PanelsError(MnemaraError):
    """Root of the application's own errors."""


class HostError(PanelsError):
    """Raised when a team's host cannot be started, found or reached as asked."""

    def __init__(self, message: str, *, team: str) -> None:
        super().__init__(message)
        self.team = team


class HostRunningError(HostError):
    """Raised by `up` when the team's host.pid names a live process."""


class NoHostError(HostError):
    """Raised when a team has no host state (never started) or no running host."""


class HostDbError(PanelsError):
    """Raised when host.sqlite is missing (with `create=False`), from a newer mnemara, or is
    not a usable database."""

    def __init__(self, message: str, *, path: Path) -> None:
        super().__init__(f"{path}: {message}")
        self.path = path


@dataclass(frozen=True)
class Problem:
    """One thing wrong in a team file; `line` is 1-based, `field` dotted (`panels[1].kind`)."""

    path: Path | None
    line: int | None
    field: str | None
    message: str

    def __str__(self) -> str:
        where = str(self.path) if self.path else "team file"
        if self.line:
            where = f"{where}:{self.line}"
        detail = f" field '{self.field}':" if self.field else ""
        return f"{where}:{detail} {self.message}"


class TeamFileError(PanelsError, ConfigError):
    """Raised when a team file cannot be read, or with every invalid value found in it; also
    when a panel's overrides do not fit its instance (`merge_limits`).

    `.path`, `.line` and `.field` are those of the first problem; `.problems` has them all.
    """

    def __init__(self, problems: Sequence[Problem]) -> None:
        if not problems:
            raise ValueError("a TeamFileError needs at least one problem")
        ordered = sorted(problems, key=lambda p: p.line or 0)  # stable: equal lines keep order
        # Not ConfigError's own format: a team file error also names the line.
        Exception.__init__(self, "\n".join(str(p) for p in ordered))
        self.problems = tuple(ordered)
        first = ordered[0]
        self.path = first.path
        self.line = first.line
        self.field = first.field

    @classmethod
    def single(
        cls, message: str, *, path: Path | None, line: int | None = None, field: str | None = None
    ) -> TeamFileError:
        """The error for one problem (an unreadable file, broken TOML)."""
        return cls([Problem(path, line, field or None, message)])


class VerbError(PanelsError, ValueError):
    """Raised when a verb cannot be read: unknown, or an argument missing or invalid."""


class WindowVerbError(PanelsError):
    """Raised when a window verb cannot be applied as given (the message says why)."""
