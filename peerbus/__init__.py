"""peerbus: the `returns` table as a message bus that never loses a message.

Async use (the host): `open_bus(path)` -> `Bus`; `claim`, `render_batch`, commit the turn,
then `ack`. Sync use (CLI, scripts, tests): `connect_bus(path)` -> `BusFile`, and the same
operations as plain functions over it. Imports nothing from the rest of mnemara.
"""

from peerbus.bus import Bus, open_bus, read_original_watermark
from peerbus.busfile import BusFile, bus_identity, close_bus, connect_bus
from peerbus.claim import claim_batch
from peerbus.errors import (
    BusBusyError,
    BusConfigError,
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
from peerbus.maintenance import prune, retry
from peerbus.model import (
    DEFAULT_SILENT_TYPES,
    BusOptions,
    BusStats,
    Claim,
    DeadLetter,
    Message,
    Pending,
    RecipientStats,
    Record,
    SettleResult,
)
from peerbus.queries import dead_letters, history, inbox, settled, stats
from peerbus.render import render_batch
from peerbus.settle import ack, extend, fail, nack
from peerbus.submit import Outgoing, register, submit, submit_many
from peerbus.waiter import ChangeWaiter
from peerbus.watch import watched_paths

__all__ = [
    "DEFAULT_SILENT_TYPES",
    "Bus",
    "BusBusyError",
    "BusConfigError",
    "BusFile",
    "BusOpenError",
    "BusOptions",
    "BusStats",
    "ChangeWaiter",
    "Claim",
    "DeadLetter",
    "ForeignSchemaError",
    "InvalidKeyError",
    "InvalidRoleError",
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
    "ack",
    "bus_identity",
    "claim_batch",
    "close_bus",
    "connect_bus",
    "dead_letters",
    "extend",
    "fail",
    "history",
    "inbox",
    "nack",
    "open_bus",
    "prune",
    "read_original_watermark",
    "register",
    "render_batch",
    "retry",
    "settled",
    "stats",
    "submit",
    "submit_many",
    "watched_paths",
]
