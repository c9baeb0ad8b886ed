"""The turn store: one instance's `turns.sqlite` (window rows, slots, markers, meta, and the
delivery state: consumed message ids and the outbox).

Modules: turn_store (TurnStore, sync), async_store (AsyncTurnStore, open_turn_store), schema
(version and migrations), delivery_sql (consumed ids and the outbox), original_rows (the
original mnemara's table), legacy (migrate_instance), export / markdown (JSONL and Markdown
exports), blocks (tool-result caps).
"""

from runtime.store.async_store import AsyncTurnStore, open_turn_store
from runtime.store.blocks import cap_tool_results, truncate_tool_result
from runtime.store.connection import RetryPolicy
from runtime.store.legacy import migrate_instance
from runtime.store.schema import LATEST_VERSION, MigrationReport
from runtime.store.snapshot import StoreSnapshot
from runtime.store.turn_store import TurnStore

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
