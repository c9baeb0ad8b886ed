"""`mnemara migrate`: bring one instance's turn store and config.json to our forms, idempotently.

Also how an instance directory written by the original mnemara is taken over: its turns.sqlite
is detected and converted (see original_rows.py for the column mapping); its config.json keeps
the original field names, and the original's field forms (the silent types' null, a silent-types
string, numbers as strings) are rewritten as ours (runtime/instance/config_compat.py), the old
file kept as `config.json.bak-<stamp>`.

Opening a store migrates one of ours from an older schema (TurnStore.open), but converts an
original mnemara's store only here: the explicit, reportable form the CLI runs on one instance
or on all of them. A missing turns.sqlite is reported, not created. An original-mnemara file is
copied to `turns.sqlite.original.bak` before it is converted, and the report lists every row
or marker the conversion had to guess at. A second run changes nothing and keeps no new backup.
"""

from __future__ import annotations

from dataclasses import dataclass

from runtime.instance.config_compat import ConfigMigration, apply_config_rewrite
from runtime.instance.debuglog import DebugLog
from runtime.instance.home import InstancePaths
from runtime.store.schema import MigrationReport
from runtime.store.turn_store import TurnStore

__all__ = ["InstanceMigration", "MigrationReport", "migrate_instance"]


@dataclass(frozen=True)
class InstanceMigration(MigrationReport):
    """The store's MigrationReport, and what was done to the instance's config.json."""

    # None only because the base class's fields have defaults; migrate_instance always sets it.
    config: ConfigMigration | None = None

    def describe(self) -> str:
        """The store's line, then one line per config change (each naming the file)."""
        config = [] if self.config is None else self.config.lines()
        return "\n".join([super().describe(), *config])


def migrate_instance(paths: InstancePaths, *, debug: DebugLog | None = None) -> InstanceMigration:
    """Migrate `paths.turns` and `paths.config` and report what was done (maybe nothing)."""
    store = _migrate_store(paths, debug)
    config = apply_config_rewrite(paths.config)
    return InstanceMigration(
        path=store.path,
        action=store.action,
        from_version=store.from_version,
        to_version=store.to_version,
        rows_converted=store.rows_converted,
        backup=store.backup,
        notes=store.notes,
        markers_converted=store.markers_converted,
        config=config,
    )


def _migrate_store(paths: InstancePaths, debug: DebugLog | None) -> MigrationReport:
    if not paths.turns.exists():
        return MigrationReport(paths.turns, "absent", None, None)
    log = debug if debug is not None else DebugLog(paths.debug_log)
    with TurnStore.open(paths.turns, debug=log, convert_original=True) as store:
        return store.migration
