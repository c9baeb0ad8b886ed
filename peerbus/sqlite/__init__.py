"""The SQLite bus: the `returns` table in one file (peerbus's own, or a foreign table shared
with the original mnemara in compatibility mode).

`open_sqlite_bus` gives the async `Bus` (a `BusBackend`; callers reach it through
`peerbus.open_bus`). The sync functions below work on a `BusFile` from `connect_bus`: the
async bus runs them on a worker thread, and tests and benchmarks call them directly.
"""

from peerbus.sqlite.bus import Bus, open_sqlite_bus
from peerbus.sqlite.busfile import BusFile, bus_identity, close_bus, connect_bus
from peerbus.sqlite.claim import claim_batch
from peerbus.sqlite.maintenance import prune, retry
from peerbus.sqlite.queries import dead_letters, history, inbox, settled, stats
from peerbus.sqlite.settle import ack, extend, fail, nack
from peerbus.sqlite.submit import register, submit, submit_many

__all__ = [
    "Bus",
    "BusFile",
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
    "open_sqlite_bus",
    "prune",
    "register",
    "retry",
    "settled",
    "stats",
    "submit",
    "submit_many",
]
