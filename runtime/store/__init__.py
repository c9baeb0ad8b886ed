"""The turn store: one instance's `turns.sqlite` (window rows, slots, markers, meta, and the
delivery state: consumed message ids and the outbox).

Modules: turn_store (TurnStore, sync), async_store (AsyncTurnStore, open_turn_store), schema
(version and migrations), delivery_sql (consumed ids and the outbox), original_rows (the
original mnemara's table), legacy (migrate_instance), export / markdown (JSONL and Markdown
exports), blocks (tool-result caps).
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from runtime.store.async_store import AsyncTurnStore, open_turn_store
    from runtime.store.blocks import cap_tool_results, truncate_tool_result
    from runtime.store.connection import RetryPolicy
    from runtime.store.legacy import migrate_instance
    from runtime.store.schema import LATEST_VERSION, MigrationReport
    from runtime.store.snapshot import StoreSnapshot
    from runtime.store.turn_store import TurnStore

# Loaded on first use: a command that only checks a store's schema (`mnemara note` refusing an
# original's instance) must not bring the config's models along.
_HOMES = {
    "AsyncTurnStore": "runtime.store.async_store",
    "open_turn_store": "runtime.store.async_store",
    "cap_tool_results": "runtime.store.blocks",
    "truncate_tool_result": "runtime.store.blocks",
    "RetryPolicy": "runtime.store.connection",
    "migrate_instance": "runtime.store.legacy",
    "LATEST_VERSION": "runtime.store.schema",
    "MigrationReport": "runtime.store.schema",
    "StoreSnapshot": "runtime.store.snapshot",
    "TurnStore": "runtime.store.turn_store",
}

__all__ = [
    "LATEST_VERSION",
    "AsyncTurnStore",
    "MigrationReport",
    "RetryPolicy",
    "StoreSnapshot",
    "TurnStore",
    "cap_tool_results",
    "migrate_instance",
    "open_turn_store",
    "truncate_tool_result",
]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(home), name)
