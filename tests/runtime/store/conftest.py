"""Fixtures for the turn store tests: a fresh store file, row builders, a rich sample store,
and `either_store`, one store contract fixture over both backends (sync and async)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from runtime.store import AsyncTurnStore, TurnStore, open_turn_store
from runtime.window.rows import NewRow, Role

MakeRow = Callable[..., NewRow]


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    return tmp_path / "turns.sqlite"


@pytest.fixture
def store(store_path: Path) -> Iterator[TurnStore]:
    with TurnStore.open(store_path) as opened:
        yield opened


class AwaitableSync:
    """The sync TurnStore with awaitable methods, so one test body serves both backends."""

    def __init__(self, store: TurnStore) -> None:
        self._store = store

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._store, name)

        async def call(*args: Any, **kwargs: Any) -> Any:
            return method(*args, **kwargs)

        return call


@pytest.fixture(params=["sync", "async"])
async def either_store(request: pytest.FixtureRequest, store_path: Path) -> AsyncIterator[Any]:
    """A store whose methods are awaited: TurnStore called in place, or AsyncTurnStore."""
    if request.param == "sync":
        with TurnStore.open(store_path) as sync_store:
            yield AwaitableSync(sync_store)
    else:
        async with open_turn_store(store_path) as async_store:
            assert isinstance(async_store, AsyncTurnStore)
            yield async_store


@pytest.fixture
def make_row() -> MakeRow:
    def build(text: str = "hello", role: Role = "user", **fields: Any) -> NewRow:
        blocks = fields.pop("blocks", ({"type": "text", "text": text},))
        return NewRow(role=role, blocks=blocks, tokens=fields.pop("tokens", 3), **fields)

    return build


RICH_ASSISTANT_BLOCKS = (
    {"type": "thinking", "thinking": "Let me check the file.", "signature": "EqQBCkYIBxgCKkBsig=="},
    {"type": "redacted_thinking", "data": "opaque-bytes=="},
    {"type": "text", "text": "Reading it now — ünïcødé, emoji 🧠, CJK 漢字."},
    {
        "type": "tool_use",
        "id": "toolu_01",
        "name": "Read",
        "input": {"file_path": "/tmp/x.py", "limit": 2000, "offset": 1.5, "flags": [True, None]},
    },
)
RICH_RESULT_BLOCKS = (
    {
        "type": "tool_result",
        "tool_use_id": "toolu_01",
        "content": [{"type": "text", "text": "line 1\nline 2\x00\ud800 lone surrogate"}],
        "is_error": False,
    },
)


@pytest.fixture
def rich_store(store: TurnStore, make_row: MakeRow) -> TurnStore:
    """A store that uses every feature: statuses, pins, labels, slots, markers, meta, gaps."""
    store.append([make_row("old, to be deleted")])
    store.mark_segment("start")
    store.append(
        [
            make_row("pinned note", role="system", pinned=True, label="03-health"),
            make_row("labelled", label="draft"),
        ]
    )
    user = store.begin_turn(make_row("question", consumed_ids=(41, 42)))
    store.commit_turn(
        user,
        [
            NewRow("assistant", RICH_ASSISTANT_BLOCKS, 120, tokens_exact=True),
            NewRow("user", RICH_RESULT_BLOCKS, 9),
        ],
        user_tokens=17,
        user_tokens_exact=True,
    )
    compressed = store.append([make_row("a Read turned into a diff")])[0]
    store.replace_blocks(compressed, ({"type": "text", "text": "unchanged"},), 2, compressed=True)
    store.begin_turn(make_row("crashed input", consumed_ids=(43,)))
    store.recover_interrupted()
    store.begin_turn(make_row("still running"))
    store.delete_rows([1])
    store.upsert_slot("health", "system", "HP: 73 / 100")
    store.upsert_slot("stamina", "system", "41 / 100")
    store.upsert_slot("hunger", "system", "62 / 100", position=0)
    store.mark_segment("after-work")
    store.set_meta("forced_pinned_evictions", "2")
    store.set_meta("last_usage", '{"input_tokens": 10}')
    return store
