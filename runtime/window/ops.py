"""Operator and agent edits to a window: evict by kind or position, compress to a target.

The choices are pure functions over rows (`plan_*`); `apply_*` writes them to the store.
Pinned rows are never touched by these; the row of a turn in flight is never deleted.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from runtime.store import AsyncTurnStore
from runtime.window.evict import (
    strip_thinking,
    strip_tool_use_bodies,
    strip_write_pairs,
    written_paths,
)
from runtime.window.rows import Block, Row, estimate_tokens


@dataclass(frozen=True)
class EditPlan:
    """Rows to rewrite (id -> new blocks) and rows to delete."""

    rewrite: dict[int, tuple[Block, ...]]
    delete: tuple[int, ...]

    @property
    def empty(self) -> bool:
        return not self.rewrite and not self.delete


def _editable(rows: Sequence[Row]) -> list[Row]:
    return [r for r in rows if not r.pinned and r.status != "in_flight"]


def plan_strip(
    rows: Sequence[Row], strip: Callable[[Sequence[Block]], tuple[Block, ...]]
) -> EditPlan:
    rewrite = {}
    for r in _editable(rows):
        slim = strip(r.blocks)
        if slim != r.blocks:
            rewrite[r.id] = slim
    return EditPlan(rewrite, ())


def plan_strip_thinking(rows: Sequence[Row]) -> EditPlan:
    return plan_strip(rows, strip_thinking)


def plan_strip_tools(rows: Sequence[Row]) -> EditPlan:
    return plan_strip(rows, strip_tool_use_bodies)


def plan_strip_write_pairs(rows: Sequence[Row]) -> EditPlan:
    paths: set[str] = set()
    for r in rows:
        paths |= written_paths(r.blocks)
    return plan_strip(rows, lambda blocks: strip_write_pairs(blocks, paths))


def plan_drop_role(rows: Sequence[Row], role: str) -> EditPlan:
    return EditPlan({}, tuple(r.id for r in _editable(rows) if r.role == role))


def plan_drop_oldest(rows: Sequence[Row], n: int) -> EditPlan:
    return EditPlan({}, tuple(r.id for r in _editable(rows)[: max(0, n)]))


def plan_drop_newest(rows: Sequence[Row], n: int) -> EditPlan:
    editable = _editable(rows)
    return EditPlan({}, tuple(r.id for r in editable[len(editable) - max(0, n) :]))


def plan_drop_ids(rows: Sequence[Row], ids: Sequence[int]) -> EditPlan:
    """Drop the rows `ids` names (pinned rows and the turn in flight excepted)."""
    wanted = set(ids)
    return EditPlan({}, tuple(r.id for r in _editable(rows) if r.id in wanted))


def _tokens(blocks: Sequence[Block]) -> int:
    return estimate_tokens(json.dumps(list(blocks), ensure_ascii=False))


def plan_compress(rows: Sequence[Row], target_tokens: int) -> EditPlan:
    """Reach `target_tokens`: strip thinking, write pairs and tool bodies first, then FIFO."""
    current = {r.id: r.blocks for r in rows}
    tokens = {r.id: r.tokens for r in rows}
    rewrite: dict[int, tuple[Block, ...]] = {}

    def total() -> int:
        return sum(tokens.values())

    for planner in (plan_strip_thinking, plan_strip_write_pairs, plan_strip_tools):
        if total() <= target_tokens:
            break
        view = [Row(**{**r.__dict__, "blocks": current[r.id]}) for r in rows]
        for row_id, blocks in planner(view).rewrite.items():
            current[row_id] = blocks
            rewrite[row_id] = blocks
            tokens[row_id] = min(tokens[row_id], _tokens(blocks))
    delete: list[int] = []
    for r in _editable(rows):
        if total() <= target_tokens:
            break
        delete.append(r.id)
        tokens.pop(r.id)
        rewrite.pop(r.id, None)
    return EditPlan(rewrite, tuple(delete))


async def apply_plan(store: AsyncTurnStore, plan: EditPlan) -> int:
    """Write a plan to the store; returns how many rows changed or went."""
    for row_id, blocks in plan.rewrite.items():
        await store.replace_blocks(row_id, blocks, _tokens(blocks))
    deleted = await store.delete_rows(plan.delete) if plan.delete else 0
    return len(plan.rewrite) + deleted
