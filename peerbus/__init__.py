"""peerbus: the `returns` table as a message bus that never loses a message.

`open_bus(location)` opens a bus for an `async with` block and yields a `BusBackend`: the
SQLite backend for a path or a `sqlite:///` URL (peerbus/sqlite/), the PostgreSQL backend
for a `postgresql://` URL (peerbus/postgres/). The host's loop: `claim`, `render_batch`,
commit the turn, then `ack`. `open_view(location)` is a viewer's read-only look at a bus
(peerbus/view.py). What is here at the top (model, routing, payload, render, errors) is pure
and shared by the backends. Imports nothing from the rest of mnemara, and no backend until
one is opened.
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from peerbus.backend import BusBackend
from peerbus.dump import BusDump
from peerbus.errors import (
    BusBusyError,
    BusConfigError,
    BusGoneError,
    BusLocationError,
    BusOpenError,
    ForeignSchemaError,
    InvalidKeyError,
    InvalidRoleError,
    PayloadEncodingError,
    PayloadError,
    PayloadNotObjectError,
    PayloadTooLargeError,
    PeerbusError,
    SchemaTooNewError,
    SidecarLostError,
)
from peerbus.location import Location, parse_location, redact
from peerbus.model import (
    DEFAULT_SILENT_TYPES,
    BusOptions,
    BusStats,
    Claim,
    DeadLetter,
    Message,
    Outgoing,
    Pending,
    RecipientStats,
    Record,
    SettleResult,
)
from peerbus.original import read_original_watermark
from peerbus.render import render_batch
from peerbus.view import BusSnapshot, BusView, Flow


@asynccontextmanager
async def open_bus(
    location: str | Path, *, options: BusOptions | None = None, **overrides: Any
) -> AsyncIterator[BusBackend]:
    """Open the bus at `location` for the block; keyword overrides replace `options` fields."""
    if "silent_types" in overrides:
        overrides["silent_types"] = frozenset(overrides["silent_types"])
    opts = dataclasses.replace(options or BusOptions(), **overrides)
    where = parse_location(location)
    if where.scheme == "postgresql":
        from peerbus.postgres import open_pg_bus

        async with open_pg_bus(where.target, opts) as pg:
            yield pg
    else:
        from peerbus.sqlite import open_sqlite_bus

        async with open_sqlite_bus(where.path, opts) as bus:
            yield bus


@asynccontextmanager
async def open_view(location: str | Path) -> AsyncIterator[BusView]:
    """The bus at `location`, read-only, for a viewer's block: never created, claimed or
    written (a SQLite file must exist)."""
    where = parse_location(location)
    if where.scheme == "postgresql":
        from peerbus.view import BackendView

        async with open_bus(location, inspect_only=True) as bus:
            yield BackendView(bus)
    else:
        from peerbus.sqlite.view import open_file_view

        async with open_file_view(where.path) as view:
            yield view


__all__ = [
    "DEFAULT_SILENT_TYPES",
    "BusBackend",
    "BusBusyError",
    "BusConfigError",
    "BusDump",
    "BusGoneError",
    "BusLocationError",
    "BusOpenError",
    "BusOptions",
    "BusSnapshot",
    "BusStats",
    "BusView",
    "Claim",
    "DeadLetter",
    "Flow",
    "ForeignSchemaError",
    "InvalidKeyError",
    "InvalidRoleError",
    "Location",
    "Message",
    "Outgoing",
    "PayloadEncodingError",
    "PayloadError",
    "PayloadNotObjectError",
    "PayloadTooLargeError",
    "PeerbusError",
    "Pending",
    "RecipientStats",
    "Record",
    "SchemaTooNewError",
    "SettleResult",
    "SidecarLostError",
    "open_bus",
    "open_view",
    "parse_location",
    "read_original_watermark",
    "redact",
    "render_batch",
]
