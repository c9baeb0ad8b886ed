"""The rehearsal model's exceptions, under the runtime's root `MnemaraError`.

MnemaraError
└── RehearsalError                 the rehearsal model cannot be set up or used as asked
    ├── ScriptError                a script file (TOML) is unreadable or invalid
    ├── NotLoopbackError           the server was asked to bind a non-loopback address
    ├── CacheRuleError             a request breaks a prompt-cache rule the service enforces
    └── CassetteError              a cassette file is unreadable or invalid (cassette/file.py)
"""

from __future__ import annotations

from pathlib import Path

from runtime.errors import MnemaraError


class RehearsalError(MnemaraError):
    """Root of the rehearsal model's errors."""


class ScriptError(RehearsalError):
    """Raised when a script cannot be parsed or a field is invalid. Names file and field."""

    def __init__(self, message: str, *, path: Path | str | None = None, field: str | None = None):
        where = str(path) if path else "<script>"
        if field:
            where = f"{where}: field '{field}'"
        super().__init__(f"{where}: {message}")
        self.path = path
        self.field = field


class NotLoopbackError(RehearsalError):
    """Raised when `host` is not a loopback address; the rehearsal model never listens outside."""

    def __init__(self, host: str):
        super().__init__(
            f"rehearsal server host {host!r} is not loopback; use 127.0.0.1, ::1 or localhost"
        )
        self.host = host


class CacheRuleError(RehearsalError):
    """Raised when a request breaks a rule the service refuses with a 400 (e.g. > 4 breakpoints).

    The server answers such a request with `invalid_request_error` carrying this message.
    """
