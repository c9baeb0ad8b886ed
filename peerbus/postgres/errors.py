"""The PostgreSQL backend's errors: peerbus's own classes, worded for a URL, not a file.

`BusOpenError`, `SchemaTooNewError` and `BusBusyError` name a file path; these subclasses
keep their place in the tree (callers catch the parent) and name the bus by its redacted
URL instead, in `url` (and `path`, for callers that print it). No message ever holds a
password: every URL here has been through `peerbus.location.redact`.
"""

from __future__ import annotations

from typing import Any

from peerbus.errors import BusBusyError, BusOpenError, PeerbusError, SchemaTooNewError


def _init(exc: PeerbusError, message: str, url: str, **fields: Any) -> None:
    PeerbusError.__init__(exc, f"{url}: {message}")
    exc.url = url  # type: ignore[attr-defined]
    exc.path = url  # type: ignore[attr-defined]
    for name, value in fields.items():
        setattr(exc, name, value)


class PgOpenError(BusOpenError):
    """Raised when the database cannot be reached, logged into, or used as a bus."""

    def __init__(self, message: str, *, url: str) -> None:
        _init(self, message, url)


class PgSchemaTooNewError(SchemaTooNewError):
    """Raised when the bus's schema version is newer than the migrations this code knows."""

    def __init__(self, *, url: str, found: int, supported: int) -> None:
        _init(
            self,
            f"schema version {found} is newer than this peerbus supports ({supported}); "
            "upgrade mnemara on this machine before opening the bus",
            url,
            found=found,
            supported=supported,
        )


class PgRefusedError(PeerbusError):
    """Raised when the server refused a statement for what it holds (text with a NUL
    character, a constraint): nothing was written, and running it again cannot help."""

    def __init__(self, *, url: str, cause: str) -> None:
        _init(self, f"the server refused the change ({cause}); nothing was written", url)


class PgBusyError(BusBusyError):
    """Raised when the server stayed unreachable (or kept refusing the transaction) past
    the lock deadline."""

    def __init__(self, *, url: str, waited: float, attempts: int, cause: str) -> None:
        _init(
            self,
            f"the PostgreSQL server stayed unavailable for {waited:.1f}s over {attempts} "
            f"attempts ({cause}); check that it runs and accepts connections, or raise "
            "the lock deadline",
            url,
            waited=waited,
            attempts=attempts,
        )
