"""`mnemara migrate`: bring one instance's turn store to the current schema, idempotently.

Also how an instance directory written by the original mnemara is taken over: its turns.sqlite
is detected and converted (see original_rows.py for the column mapping); its config.json keeps
the original field names and needs no conversion.

Opening a store already migrates it (TurnStore.open); this is the explicit, reportable form the
CLI runs on one instance or on all of them. A missing turns.sqlite is reported, not created.
An original-mnemara file is copied to `turns.sqlite.original.bak` before it is converted.
"""

from __future__ import annotations

from runtime.debuglog import DebugLog
from runtime.home import InstancePaths
from runtime.store.schema import MigrationReport
from runtime.store.turn_store import TurnStore

__all__ = ["MigrationReport", "migrate_instance"]


def migrate_instance(paths: InstancePaths, *, debug: DebugLog | None = None) -> MigrationReport:
    """Migrate `paths.turns` to the current schema and report what was done (maybe nothing)."""
    if not paths.turns.exists():
        return MigrationReport(paths.turns, "absent", None, None)
    log = debug if debug is not None else DebugLog(paths.debug_log)
    with TurnStore.open(paths.turns, debug=log) as store:
        return store.migration
