"""AsyncTurnStore specifics: running store functions on its thread, closing when cancelled."""

from __future__ import annotations

import io
import sqlite3
from pathlib import Path

import anyio
import pytest

from runtime.store import TurnStore, open_turn_store
from runtime.store.export import export_jsonl
from runtime.window.rows import NewRow

pytestmark = pytest.mark.anyio


async def test_run_calls_a_store_function_on_the_store_thread(store_path: Path) -> None:
    async with open_turn_store(store_path) as store:
        await store.append([NewRow("user", ({"type": "text", "text": "hi"},), 1)])
        out = io.StringIO()
        assert await store.run(export_jsonl, out, instance="x") == 1
        assert out.getvalue().count("\n") == 2


async def test_store_is_closed_when_its_owner_is_cancelled(store_path: Path) -> None:
    opened: list[object] = []
    with anyio.CancelScope() as scope:
        async with open_turn_store(store_path) as store:
            opened.append(store)
            scope.cancel()
            await anyio.sleep_forever()
    assert scope.cancelled_caught
    inner = opened[0]._store  # type: ignore[attr-defined]
    assert isinstance(inner, TurnStore)
    with pytest.raises(sqlite3.ProgrammingError, match="closed"):
        inner._conn.execute("SELECT 1")


async def test_concurrent_tasks_share_one_store_safely(store_path: Path) -> None:
    async with open_turn_store(store_path) as store:

        async def writer(name: str) -> None:
            for n in range(20):
                await store.append([NewRow("user", ({"type": "text", "text": f"{name}{n}"},), 1)])

        async with anyio.create_task_group() as tg:
            for name in "abcd":
                tg.start_soon(writer, name)
        assert len(await store.rows()) == 80
