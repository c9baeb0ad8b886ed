"""The row-render cache: a prompt built through it is the prompt `build_prompt` gives, and every
kind of row change, by this store or by another connection or process, renders the row afresh."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from runtime.instance.home import InstancePaths
from runtime.store import TurnStore
from runtime.turn.driver import Done, DriverEvent, TextDelta, TurnRequest, Usage
from runtime.turn.open import open_session
from runtime.turn.prompt import build_prompt, render_row, render_transcript
from runtime.turn.render_cache import RenderCache
from runtime.turn.scripted import ScriptedDriver
from runtime.window.rows import Block, NewRow, Row

PROJECT = Path(__file__).resolve().parents[2]


def tool_exchange(n: int) -> tuple[Block, ...]:
    return (
        {"type": "text", "text": f"reading {n}"},
        {"type": "tool_use", "id": f"t{n}", "name": "Read", "input": {"file_path": f"/f{n}"}},
        {"type": "tool_result", "tool_use_id": f"t{n}", "content": f"body {n}", "is_error": False},
    )


def mixed_rows() -> list[NewRow]:
    """Text, tool_use and tool_result, thinking (alone: renders to nothing), an error result."""
    return [
        NewRow("user", ({"type": "text", "text": "hello"},), 2),
        NewRow("assistant", tool_exchange(1), 20),
        NewRow("assistant", ({"type": "thinking", "thinking": "quiet", "signature": "s"},), 5),
        NewRow(
            "assistant",
            (
                {"type": "thinking", "thinking": "hmm", "signature": "s"},
                {"type": "text", "text": "ok"},
            ),
            4,
        ),
        NewRow(
            "assistant",
            (
                {"type": "tool_use", "id": "e", "name": "Bash", "input": {"command": "false"}},
                {"type": "tool_result", "tool_use_id": "e", "content": [], "is_error": True},
            ),
            9,
        ),
        NewRow("user", ({"type": "text", "text": "   "},), 1),
    ]


def render_with_flags(row: Row) -> str | None:
    """render_row plus the fields it ignores today, so a stale entry shows in the output."""
    text = render_row(row)
    flags = f"pinned={row.pinned} label={row.label} compressed={row.compressed}"
    return None if text is None else f"{text}\n{flags} status={row.status}"


class CountingRender:
    """`render_with_flags`, recording the rows it rendered."""

    def __init__(self) -> None:
        self.rendered: list[int] = []

    def __call__(self, row: Row) -> str | None:
        self.rendered.append(row.id)
        return render_with_flags(row)


def cached_blocks(store: TurnStore, cache: RenderCache, leave_out: int | None = None) -> list[Any]:
    prompt = build_prompt(
        role_doc="R",
        transcript=cache.transcript(store.revised_rows(), leave_out=leave_out),
        input_text="now",
    )
    return list(prompt.blocks)


def fresh_blocks(store: TurnStore, leave_out: int | None = None) -> list[Any]:
    rows = [r for r in store.rows() if r.id != leave_out]
    return list(
        build_prompt(role_doc="R", transcript=render_transcript(rows), input_text="now").blocks
    )


@pytest.fixture
def store(tmp_path: Path) -> Iterator[TurnStore]:
    with TurnStore.open(tmp_path / "turns.sqlite") as opened:
        yield opened


def test_cached_prompt_is_the_uncached_prompt_over_mixed_rows(store: TurnStore) -> None:
    store.append(mixed_rows())
    store.begin_turn(NewRow("user", ({"type": "text", "text": "cut off"},), 2))
    assert store.recover_interrupted()
    cache = RenderCache()
    first = cached_blocks(store, cache)
    assert first == fresh_blocks(store)
    assert any("no reply was recorded" in b["text"] for b in first)  # the interrupted row
    assert any("[tool_result for=e error]" in b["text"] for b in first)
    # A turn later: its input in flight (left out), the previous reply appended.
    store.append([NewRow("assistant", tool_exchange(2), 20)])
    user = store.begin_turn(NewRow("user", ({"type": "text", "text": "next"},), 2))
    assert cached_blocks(store, cache, leave_out=user) == fresh_blocks(store, leave_out=user)


def change_by(
    kind: str,
) -> Callable[[TurnStore, list[int]], None]:
    """Each kind of row change, applied to the second row (or the in-flight one)."""

    def apply(s: TurnStore, ids: list[int]) -> None:
        target = ids[1]
        if kind == "replace_blocks":
            s.replace_blocks(target, [{"type": "text", "text": "rewritten"}], 2)
        elif kind == "pin":
            s.set_pinned(target, True)
        elif kind == "unpin":
            s.set_pinned(ids[0], False)
        elif kind == "label":
            s.set_label(target, "kept")
        elif kind == "compressed":
            # Same blocks and tokens: only the flag changes.
            row = s.row(target)
            assert row is not None
            s.replace_blocks(target, row.blocks, row.tokens, compressed=True)
        elif kind == "interrupted":
            assert s.recover_interrupted() == [ids[-1]]
        elif kind == "delete":
            s.delete_rows([target])
        elif kind == "reimport":
            snapshot = s.snapshot()
            s.replace_blocks(target, [{"type": "text", "text": "edited"}], 2)
            s.restore(snapshot, replace=True)  # same ids, the earlier content
        else:
            raise AssertionError(kind)

    return apply


KINDS = [
    "replace_blocks",
    "pin",
    "unpin",
    "label",
    "compressed",
    "interrupted",
    "delete",
    "reimport",
]


@pytest.mark.parametrize("by", ["this store", "another connection"])
@pytest.mark.parametrize("kind", KINDS)
def test_every_kind_of_change_renders_the_row_afresh(store: TurnStore, kind: str, by: str) -> None:
    ids = store.append(
        [
            NewRow("user", ({"type": "text", "text": "first"},), 2, pinned=True),
            NewRow("assistant", tool_exchange(1), 20),
            NewRow("user", ({"type": "text", "text": "third"},), 2),
        ]
    )
    ids.append(store.begin_turn(NewRow("user", ({"type": "text", "text": "in flight"},), 2)))
    render = CountingRender()
    cache = RenderCache(render)
    before = cached_blocks(store, cache)
    render.rendered.clear()
    assert cached_blocks(store, cache) == before and render.rendered == []  # all cached
    if by == "this store":
        change_by(kind)(store, ids)
    else:
        with TurnStore.open(store.path) as other:
            change_by(kind)(other, ids)
    after = cached_blocks(store, cache)
    uncached = [render_with_flags(r) for r in store.rows()]
    expected = build_prompt(
        role_doc="R",
        transcript=[{"type": "text", "text": t} for t in uncached if t is not None],
        input_text="now",
    ).blocks
    assert after == list(expected)
    if kind == "delete":
        assert render.rendered == [] and len(cache) == len(ids) - 1
    elif kind == "reimport":
        # Back to the same content, but every row was written again: all rendered again.
        assert after == before and sorted(render.rendered) == ids
    else:
        changed = {"unpin": ids[0], "interrupted": ids[-1]}.get(kind, ids[1])
        assert after != before and render.rendered == [changed]


def test_a_change_by_another_process_renders_the_row_afresh(store: TurnStore) -> None:
    ids = store.append(
        [NewRow("user", ({"type": "text", "text": f"row {n}"},), 2) for n in range(3)]
    )
    cache = RenderCache()
    assert "row 1" in cached_blocks(store, cache)[2]["text"]
    code = (
        "import sys; from pathlib import Path; from runtime.store import TurnStore\n"
        "with TurnStore.open(Path(sys.argv[1])) as s:\n"
        "    s.replace_blocks(int(sys.argv[2]), [{'type': 'text', 'text': 'from elsewhere'}], 3)\n"
        "    s.delete_rows([int(sys.argv[3])])\n"
    )
    subprocess.run(
        [sys.executable, "-c", code, str(store.path), str(ids[1]), str(ids[0])],
        cwd=PROJECT,
        check=True,
        timeout=120,
    )
    after = cached_blocks(store, cache)
    assert "from elsewhere" in after[1]["text"] and "row 0" not in str(after)
    assert after == fresh_blocks(store) and len(cache) == 2


def test_only_new_and_changed_rows_are_rendered(store: TurnStore) -> None:
    ids = store.append(
        [NewRow("user", ({"type": "text", "text": f"row {n}"},), 2) for n in range(5)]
    )
    render = CountingRender()
    cache = RenderCache(render)
    cached_blocks(store, cache)
    assert sorted(render.rendered) == ids
    render.rendered.clear()
    new = store.append([NewRow("assistant", ({"type": "text", "text": "reply"},), 2)])
    store.set_label(ids[2], "x")
    cached_blocks(store, cache)
    assert sorted(render.rendered) == sorted([ids[2], *new])


def test_entries_of_rows_that_left_the_window_are_dropped(store: TurnStore) -> None:
    ids = store.append(
        [NewRow("user", ({"type": "text", "text": f"row {n}"},), 2) for n in range(6)]
    )
    cache = RenderCache()
    cached_blocks(store, cache)
    assert len(cache) == 6
    store.delete_rows(ids[:2])  # a trim: the oldest rows go
    store.append([NewRow("user", ({"type": "text", "text": "new"},), 2)])
    assert cached_blocks(store, cache) == fresh_blocks(store)
    assert len(cache) == 5
    store.delete_rows([ids[3]])  # from the middle
    assert cached_blocks(store, cache) == fresh_blocks(store)
    assert len(cache) == 4
    store.clear(keep_pinned=False)
    assert cached_blocks(store, cache) == fresh_blocks(store)
    assert len(cache) == 0


@pytest.mark.anyio
async def test_session_prompts_equal_build_prompt_turn_after_turn(
    instance: InstancePaths, approver: object
) -> None:
    with TurnStore.open(instance.turns) as seed:
        ids = seed.append(mixed_rows())
        seed.upsert_slot("goal", "system", "ship it")
    seen: list[tuple[tuple[Block, ...], list[Block]]] = []

    def answer(request: TurnRequest) -> list[DriverEvent]:
        # What build_prompt makes of the stored window, read through another connection.
        with TurnStore.open(instance.turns) as other:
            in_flight = [r.id for r in other.rows() if r.status == "in_flight"]
            rows = [r for r in other.rows() if r.id not in in_flight]
            expected = build_prompt(
                role_doc=request.system,
                transcript=render_transcript(rows),
                slots=other.slots(),
                input_text="x",
            )
        seen.append((request.blocks, list(expected.blocks)))
        return [TextDelta(f"reply {len(seen)}"), Usage(10, 3), Done()]

    driver = ScriptedDriver([answer] * 4)
    async with open_session("t1", driver=driver, approver=approver) as s:  # type: ignore[arg-type]
        for n in range(4):
            if n == 1:
                await s.store.set_pinned(ids[1], True)
            elif n == 2:
                await s.store.replace_blocks(ids[3], [{"type": "text", "text": "new"}], 2)
            elif n == 3:
                await s.store.delete_rows([ids[0]])
            async for _ in s.turn(f"turn {n}"):
                pass
        # The last prompt's rows, each with an entry: all but the last turn's input and reply.
        assert len(s.renders) == len(await s.store.rows()) - 2
    assert len(seen) == 4
    for sent, expected in seen:
        # The transcript part: everything up to and including the marked block.
        marked = next(i for i, b in enumerate(sent) if "cache_control" in b)
        assert list(sent[: marked + 1]) == expected[: marked + 1]
