"""`AsyncTurnStore`: the TurnStore's methods as coroutines, run on a worker thread one at a time.

The limiter (`CapacityLimiter(1)`) is what makes sharing one sqlite3 connection across worker
threads safe. `to_thread.run_sync` is not abandoned on cancellation, so a write that has started
always finishes (or rolls back) before the cancelled caller moves on.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path
from typing import Concatenate, ParamSpec, TypeVar

import anyio
import anyio.to_thread

from runtime.instance.debuglog import DebugLog
from runtime.store.snapshot import StoreSnapshot
from runtime.store.turn_store import TurnStore
from runtime.window.rows import Block, Consumed, Marker, NewRow, OutboxDraft, OutboxEntry, Row, Slot

T = TypeVar("T")
P = ParamSpec("P")


PromptParts = tuple[list[tuple[int, Row]], list[Slot]]  # the window as revised_rows, the slots


def _prompt_parts(store: TurnStore) -> PromptParts:
    return store.revised_rows(), store.slots()


def _begin_and_read(store: TurnStore, user: NewRow) -> tuple[int, PromptParts]:
    return store.begin_turn(user), _prompt_parts(store)


class AsyncTurnStore:
    """TurnStore for async callers; every call waits its turn for the one connection."""

    def __init__(self, store: TurnStore) -> None:
        self._store = store
        self._limiter = anyio.CapacityLimiter(1)

    @property
    def path(self) -> Path:
        return self._store.path

    async def run(
        self, fn: Callable[Concatenate[TurnStore, P], T], *args: P.args, **kwargs: P.kwargs
    ) -> T:
        """Run `fn(store, ...)` on the store's thread, e.g. `export_jsonl` for `/export`."""
        call = partial(fn, self._store, *args, **kwargs)
        return await anyio.to_thread.run_sync(call, limiter=self._limiter)

    async def close(self) -> None:
        await anyio.to_thread.run_sync(self._store.close, limiter=self._limiter)

    async def rows(self) -> list[Row]:
        return await self.run(TurnStore.rows)

    async def revised_rows(self) -> list[tuple[int, Row]]:
        return await self.run(TurnStore.revised_rows)

    async def prompt_parts(self) -> PromptParts:
        """`revised_rows()` and `slots()`, read in one hop to the store's thread."""
        return await self.run(_prompt_parts)

    async def window_totals(self) -> tuple[int, int]:
        return await self.run(TurnStore.window_totals)

    async def row(self, row_id: int) -> Row | None:
        return await self.run(TurnStore.row, row_id)

    async def append(self, rows: Sequence[NewRow]) -> list[int]:
        return await self.run(TurnStore.append, rows)

    async def begin_turn(self, user: NewRow) -> int:
        return await self.run(TurnStore.begin_turn, user)

    async def begin_turn_and_read(self, user: NewRow) -> tuple[int, PromptParts]:
        """`begin_turn`, then `prompt_parts()` as the window stands with the input row in it,
        in one hop: a turn's first two calls, each of which would cost a thread switch."""
        return await self.run(_begin_and_read, user)

    async def commit_turn(
        self,
        user_row_id: int,
        rows: Sequence[NewRow],
        *,
        user_tokens: int | None = None,
        user_tokens_exact: bool = False,
        consumed: Consumed | None = None,
        outbox: Sequence[OutboxDraft] = (),
        meta: Mapping[str, str] | None = None,
    ) -> list[int]:
        return await self.run(
            TurnStore.commit_turn,
            user_row_id,
            rows,
            user_tokens=user_tokens,
            user_tokens_exact=user_tokens_exact,
            consumed=consumed,
            outbox=list(outbox),
            meta=dict(meta or {}),
        )

    async def recover_interrupted(self) -> list[int]:
        return await self.run(TurnStore.recover_interrupted)

    async def delete_rows(self, ids: Iterable[int]) -> int:
        return await self.run(TurnStore.delete_rows, list(ids))

    async def replace_blocks(
        self,
        row_id: int,
        blocks: Sequence[Block],
        tokens: int,
        *,
        tokens_exact: bool = False,
        compressed: bool | None = None,
    ) -> None:
        await self.run(
            TurnStore.replace_blocks,
            row_id,
            blocks,
            tokens,
            tokens_exact=tokens_exact,
            compressed=compressed,
        )

    async def set_pinned(self, row_id: int, pinned: bool) -> None:
        await self.run(TurnStore.set_pinned, row_id, pinned)

    async def set_label(self, row_id: int, label: str) -> None:
        await self.run(TurnStore.set_label, row_id, label)

    async def clear(self, *, keep_pinned: bool = True) -> int:
        return await self.run(TurnStore.clear, keep_pinned=keep_pinned)

    async def consumed_ids(self) -> set[int]:
        return await self.run(TurnStore.consumed_ids)

    async def committed(self, source: str, ids: Sequence[int]) -> dict[int, int]:
        return await self.run(TurnStore.committed, source, list(ids))

    async def mark_acked(self, source: str, ids: Sequence[int]) -> int:
        return await self.run(TurnStore.mark_acked, source, list(ids))

    async def unacked(self, source: str, *, limit: int = 10_000) -> list[int]:
        return await self.run(TurnStore.unacked, source, limit=limit)

    async def outbox_pending(self, source: str | None = None) -> list[OutboxEntry]:
        return await self.run(TurnStore.outbox_pending, source)

    async def outbox(self, *, limit: int = 100) -> list[OutboxEntry]:
        return await self.run(TurnStore.outbox, limit=limit)

    async def mark_published(self, key: str, message_id: int) -> None:
        await self.run(TurnStore.mark_published, key, message_id)

    async def mark_send_failed(self, key: str, reason: str) -> None:
        await self.run(TurnStore.mark_send_failed, key, reason)

    async def prune_delivery(self, *, older_than: float) -> int:
        return await self.run(TurnStore.prune_delivery, older_than=older_than)

    async def slots(self) -> list[Slot]:
        return await self.run(TurnStore.slots)

    async def upsert_slot(
        self, label: str, role: str, content: str, position: int | None = None
    ) -> Slot:
        return await self.run(TurnStore.upsert_slot, label, role, content, position)

    async def delete_slot(self, label: str) -> bool:
        return await self.run(TurnStore.delete_slot, label)

    async def move_slot(self, label: str, position: int) -> Slot:
        return await self.run(TurnStore.move_slot, label, position)

    async def mark_segment(self, name: str) -> Marker:
        return await self.run(TurnStore.mark_segment, name)

    async def markers(self) -> list[Marker]:
        return await self.run(TurnStore.markers)

    async def rows_since(self, marker_name: str) -> list[Row]:
        return await self.run(TurnStore.rows_since, marker_name)

    async def get_meta(self, key: str) -> str | None:
        return await self.run(TurnStore.get_meta, key)

    async def set_meta(self, key: str, value: str) -> None:
        await self.run(TurnStore.set_meta, key, value)

    async def snapshot(self) -> StoreSnapshot:
        return await self.run(TurnStore.snapshot)

    async def restore(self, snapshot: StoreSnapshot, *, replace: bool = False) -> None:
        await self.run(TurnStore.restore, snapshot, replace=replace)


@asynccontextmanager
async def open_turn_store(
    path: Path, *, debug: DebugLog | None = None
) -> AsyncIterator[AsyncTurnStore]:
    """Open the store on a worker thread; closed on exit, even when the caller is cancelled."""
    store = await anyio.to_thread.run_sync(partial(TurnStore.open, path, debug=debug))
    wrapper = AsyncTurnStore(store)
    try:
        yield wrapper
    finally:
        # Shielded so a cancelled owner still releases the file. Bounded: closing frees the
        # handle and at most checkpoints the WAL, which waits no longer than busy_timeout.
        with anyio.CancelScope(shield=True):
            await wrapper.close()
