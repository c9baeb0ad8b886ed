"""Checkpoints of a panel's writable areas before each turn, and the rewind that restores one.

model.py (the values), plan.py (what a rewind changes, what pruning drops: pure),
store.py (the contract and the choice of store), gitstore.py and copystore.py (the two
stores), records.py (one JSON record per checkpoint), restore.py (writing a plan to disk),
rewind.py (a rewind and its report). The host takes a checkpoint before each turn that may
write (panels/host/turns/checkpoints.py); `mnemara rewind` and the `rewind` verb restore one.
"""

from runtime.checkpoint.model import (
    AreaRecord,
    Changes,
    Checkpoint,
    CheckpointSettings,
    Entry,
    Taken,
)
from runtime.checkpoint.rewind import RewindReport, describe, rewind
from runtime.checkpoint.store import (
    CheckpointStore,
    find,
    open_store,
    store_dir,
    take_and_prune,
)

__all__ = [
    "AreaRecord",
    "Changes",
    "Checkpoint",
    "CheckpointSettings",
    "CheckpointStore",
    "Entry",
    "RewindReport",
    "Taken",
    "describe",
    "find",
    "open_store",
    "rewind",
    "store_dir",
    "take_and_prune",
]
