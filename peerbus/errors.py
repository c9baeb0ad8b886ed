"""The bus's exceptions: one root, each class raised in one kind of situation.

PeerbusError                  root of everything peerbus raises on purpose
├── BusConfigError            an option passed to the bus is out of range
├── BusOpenError              a file cannot be used as a bus
│   ├── ForeignSchemaError    a `returns` table lacks contract columns
│   ├── SidecarLostError      a compatibility sidecar was deleted while a consumer used it
│   ├── SchemaTooNewError     the file was migrated by a newer peerbus
│   └── BusGoneError          the bus file vanished or cannot be written (read-only)
├── BusBusyError              the write lock stayed taken past the retry deadline
├── GateTimeout               inside the SQLite runner only: the writers' gate stayed taken
│                             (peerbus/sqlite/gate.py); raised to callers as BusBusyError
├── InvalidRoleError          a sender, recipient or sender filter is not a usable role name
├── InvalidKeyError           an idempotency key handed to `submit` is not usable
└── PayloadError              a payload handed to `submit` is refused
    ├── PayloadNotObjectError the payload is not a JSON object
    ├── PayloadTooLargeError  the encoded payload is over the size cap
    └── PayloadEncodingError  the payload cannot be encoded as JSON (or nests too deep)

A claim that lost its lease is not an error: `ack`, `nack`, `fail` and `extend` return a
`SettleResult` that lists the lost ids. Bad rows found while claiming are not errors either:
they are dead-lettered with a reason and the rest of the batch keeps flowing.
"""

from __future__ import annotations

from pathlib import Path


class PeerbusError(Exception):
    """Root of peerbus's own errors."""


class BusConfigError(PeerbusError):
    """Raised by `BusOptions` when an option is out of range. Names the option."""

    def __init__(self, message: str, *, option: str) -> None:
        super().__init__(f"bus option '{option}': {message}")
        self.option = option


class BusLocationError(PeerbusError):
    """Raised when a bus location is neither a path nor a URL of a backend peerbus has."""


class BusOpenError(PeerbusError):
    """Raised when a bus cannot be opened, migrated or attached. `path`: the file, or the
    URL of a PostgreSQL bus without its password."""

    def __init__(self, message: str, *, path: Path | str) -> None:
        super().__init__(f"{path}: {message}")
        self.path = path


class ForeignSchemaError(BusOpenError):
    """Raised when an existing `returns` table lacks one of the seven contract columns."""

    def __init__(self, *, path: Path, missing: tuple[str, ...]) -> None:
        super().__init__(
            f"the `returns` table lacks contract column(s) {', '.join(missing)}; add them "
            "(see the README's peer-message schema) or point --db at another file",
            path=path,
        )
        self.missing = missing


class SidecarLostError(BusOpenError):
    """Raised when a compatibility sidecar is gone (or empty) but its `-wal`/`-shm` files
    remain: it was deleted while a consumer had it open, and SQLite cannot use it."""

    def __init__(self, *, path: Path, sidecar: Path) -> None:
        super().__init__(
            f"its sidecar {sidecar} was deleted while a consumer still had it open (its -wal "
            "and -shm files remain); stop every host using this bus, then delete "
            f"{sidecar.name}-wal and {sidecar.name}-shm to start its delivery state afresh "
            "(rows delivered before may come again), or restore the sidecar from a backup",
            path=path,
        )
        self.sidecar = sidecar


class SchemaTooNewError(BusOpenError):
    """Raised when `PRAGMA user_version` is newer than the migrations this peerbus knows."""

    def __init__(self, *, path: Path | str, found: int, supported: int) -> None:
        super().__init__(
            f"schema version {found} is newer than this peerbus supports ({supported}); "
            "upgrade mnemara on this machine before opening the bus",
            path=path,
        )
        self.found = found
        self.supported = supported


class BusGoneError(BusOpenError):
    """Raised when the bus file is gone (deleted or moved away) while a bus has it open, or
    SQLite refuses to write it (read-only). Raised at once by every call that needs the
    file, never retried: the bus's work stops until the file is back. A file replaced by
    another (moved over it) is not an error: the bus opens the new one."""

    def __init__(self, *, path: Path | str, gone: bool, detail: str = "") -> None:
        what = (
            "is gone (deleted or moved away while in use)"
            if gone
            else f"cannot be written ({detail or 'read-only'})"
        )
        super().__init__(
            f"the bus file {what}; restore it (or make it writable), then resume or "
            "restart the panel",
            path=path,
        )
        self.gone = gone


class BusBusyError(PeerbusError):
    """Raised when a write could not take the lock within the retry deadline."""

    def __init__(
        self, *, path: Path | str, waited: float, attempts: int, why: str | None = None
    ) -> None:
        why = why or (
            f"the bus stayed locked for {waited:.1f}s over {attempts} attempts; find the "
            "process holding a long write transaction (e.g. `fuser` on the file) or raise "
            "the lock deadline"
        )
        super().__init__(f"{path}: {why}")
        self.path = path
        self.waited = waited
        self.attempts = attempts


class InvalidRoleError(PeerbusError):
    """Raised when a role name is empty, too long, or has characters outside [A-Za-z0-9._:@-]."""

    def __init__(self, *, role: str, field: str) -> None:
        super().__init__(
            f"{field} {role!r} is not a role name: use 1-64 letters, digits, '.', '_', ':', "
            "'@' or '-', starting with a letter or digit"
        )
        self.role = role
        self.field = field


class InvalidKeyError(PeerbusError):
    """Raised by `submit` when an idempotency key is not a string of 1 to `limit` characters;
    nothing was written."""

    def __init__(self, *, key: object, limit: int) -> None:
        shown = repr(key) if not isinstance(key, str) or len(key) <= 40 else repr(key[:40]) + "..."
        super().__init__(
            f"idempotency key {shown} is not usable: give a string of 1-{limit} characters "
            "that names this send (e.g. panel, turn and call), or no key"
        )
        self.key = key
        self.limit = limit


class PayloadError(PeerbusError):
    """Raised by `submit` when a payload is refused; nothing was written."""


class PayloadNotObjectError(PayloadError):
    """Raised when the payload is a list, string, number or null instead of a JSON object."""

    def __init__(self, *, kind: str) -> None:
        super().__init__(
            f"the payload is a JSON {kind}, but bus payloads must be JSON objects; "
            'wrap it, e.g. {"type": "note", "text": ...}'
        )
        self.kind = kind


class PayloadTooLargeError(PayloadError):
    """Raised when the encoded payload is over `max_payload_bytes`."""

    def __init__(self, *, size: int, limit: int) -> None:
        super().__init__(
            f"the payload is {size} bytes encoded, over the {limit}-byte cap; send a path or "
            "a summary instead of the content, or raise max_payload_bytes"
        )
        self.size = size
        self.limit = limit


class PayloadEncodingError(PayloadError):
    """Raised when the payload is not JSON-encodable, or nests deeper than the depth cap."""

    def __init__(self, message: str) -> None:
        super().__init__(f"the payload cannot be sent: {message}")
