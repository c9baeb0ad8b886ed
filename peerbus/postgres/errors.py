"""The PostgreSQL backend's errors: peerbus's own classes, worded for a URL, not a file.

These subclasses keep their place in the tree (callers catch the parent) and name the bus
by its redacted URL, in `url` and in `path`. No message ever holds a password: every URL
here has been through `peerbus.location.redact`.
"""

from __future__ import annotations

from peerbus.errors import BusBusyError, BusOpenError, PeerbusError, SchemaTooNewError


class PgOpenError(BusOpenError):
    """Raised when the database cannot be reached, logged into, or used as a bus."""

    def __init__(self, message: str, *, url: str) -> None:
        super().__init__(message, path=url)
        self.url = url


class PgSchemaTooNewError(SchemaTooNewError):
    """Raised when the bus's schema version is newer than the migrations this code knows."""

    def __init__(self, *, url: str, found: int, supported: int) -> None:
        super().__init__(path=url, found=found, supported=supported)
        self.url = url


class PgRefusedError(PeerbusError):
    """Raised when the server refused a statement for what it holds (text with a NUL
    character, a constraint): nothing was written, and running it again cannot help."""

    def __init__(self, *, url: str, cause: str) -> None:
        super().__init__(f"{url}: the server refused the change ({cause}); nothing was written")
        self.url = url


class PgBusyError(BusBusyError):
    """Raised when the server stayed unreachable (or kept refusing the transaction) past
    the lock deadline."""

    def __init__(self, *, url: str, waited: float, attempts: int, cause: str) -> None:
        why = (
            f"the PostgreSQL server stayed unavailable for {waited:.1f}s over {attempts} "
            f"attempts ({cause}); check that it runs and accepts connections, or raise "
            "the lock deadline"
        )
        super().__init__(path=url, waited=waited, attempts=attempts, why=why)
        self.url = url
