"""The agent's eviction tools: drop rows, or strip bulky blocks while keeping the audit shell.

Plans come from runtime.window.ops (the same ones `/evict` uses). Pinned rows are never
touched. The input row of the turn in flight is never deleted: `evict_ids` refuses a call
that names it, and the other tools do not count it (`evict_last 1` drops the newest
*finished* row, not the question being answered).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from runtime.tools.context import ToolContext
from runtime.tools.params import Args, Param, Run, define, ok, refuse
from runtime.turn.driver import ToolOutput, ToolSpec
from runtime.window import ops as window_ops
from runtime.window.ops import EditPlan
from runtime.window.rows import Row


def editable(rows: Sequence[Row], in_flight: int | None) -> list[Row]:
    return [r for r in rows if not r.pinned and r.status != "in_flight" and r.id != in_flight]


def plan_drop_ids(rows: Sequence[Row], ids: Sequence[int], in_flight: int | None) -> EditPlan | str:
    """Delete exactly `ids`, or say why not (the turn in flight is named; a row is pinned)."""
    by_id = {r.id: r for r in rows}
    if in_flight is not None and in_flight in ids:
        return (
            f"row {in_flight} is the input of the turn in flight and cannot be evicted; "
            "nothing was evicted"
        )
    pinned = sorted(i for i in set(ids) if i in by_id and by_id[i].pinned)
    if pinned:
        return f"row(s) {pinned} are pinned; unpin_row first. Nothing was evicted"
    return EditPlan({}, tuple(sorted(i for i in set(ids) if i in by_id)))


def eviction_tools(ctx: ToolContext) -> list[ToolSpec]:
    store = ctx.store

    async def apply(what: str, plan: EditPlan) -> ToolOutput:
        changed = await window_ops.apply_plan(store, plan)
        ctx.debug.write(
            "eviction",
            f"agent_{what}",
            rewritten=sorted(plan.rewrite),
            deleted=list(plan.delete),
            in_flight=ctx.in_flight_row,
        )
        if plan.delete:
            return ok(f"{what}: evicted {len(plan.delete)} row(s): {list(plan.delete)}")
        return ok(f"{what}: {changed} row(s) changed: {sorted(plan.rewrite)}")

    async def evict_last(a: Args) -> ToolOutput:
        rows = editable(await store.rows(), ctx.in_flight_row)
        return await apply("evict_last", window_ops.plan_drop_newest(rows, a["n"]))

    async def evict_ids(a: Args) -> ToolOutput:
        plan = plan_drop_ids(await store.rows(), a["ids"], ctx.in_flight_row)
        if isinstance(plan, str):
            return refuse(f"evict_ids: {plan}")
        missing = sorted(set(a["ids"]) - set(plan.delete))
        out = await apply("evict_ids", plan)
        return ok(out.text + (f" (not in the window: {missing})" if missing else ""))

    async def evict_since(a: Args) -> ToolOutput:
        rows = editable(await store.rows_since(a["marker"]), ctx.in_flight_row)
        return await apply("evict_since", EditPlan({}, tuple(r.id for r in rows)))

    async def evict_older_than(a: Args) -> ToolOutput:
        rows = editable(await store.rows(), ctx.in_flight_row)
        ids = tuple(r.id for r in rows if r.id < a["row_id"])
        return await apply("evict_older_than", EditPlan({}, ids))

    async def mark_segment(a: Args) -> ToolOutput:
        marker = await store.mark_segment(a["name"])
        return ok(
            f"marker {marker.name!r} set after row {marker.after_row_id}; "
            f"evict_since('{marker.name}') drops the rows added after it"
        )

    def stripper(what: str, planner: Callable[[Sequence[Row]], EditPlan]) -> Run:
        async def run(a: Args) -> ToolOutput:
            rows = editable(await store.rows(), ctx.in_flight_row)
            if a["row_ids"] is not None:
                wanted = set(a["row_ids"])
                rows = [r for r in rows if r.id in wanted]
            return await apply(what, planner(rows))

        return run

    row_ids = Param(
        "row_ids", "array", "Only these rows (default: every unpinned row).", items="integer"
    )
    strip_specs = [
        (
            "evict_thinking_blocks",
            "Strip thinking blocks from rows, keeping text and tool calls.",
            window_ops.plan_strip_thinking,
        ),
        (
            "evict_tool_use_blocks",
            "Strip tool call inputs and tool results to a stub that still names the file or "
            "command; often the largest saving.",
            window_ops.plan_strip_tools,
        ),
        (
            "evict_write_pairs",
            "Stub the bodies of Edit/Write calls and of earlier Reads of the same files; the "
            "change is on disk, the audit line stays.",
            window_ops.plan_strip_write_pairs,
        ),
    ]
    specs = [
        define(
            "evict_last",
            "Drop the newest finished rows (not the turn in flight, not pinned rows).",
            [Param("n", "integer", "How many rows.", required=True, minimum=1)],
            evict_last,
        ),
        define(
            "evict_ids",
            "Drop the given rows. Refused if one is the turn in flight or pinned.",
            [Param("ids", "array", "Row ids.", required=True, items="integer", minimum=1)],
            evict_ids,
        ),
        define(
            "evict_since",
            "Drop every unpinned row added after a marker set with mark_segment.",
            [Param("marker", "string", "The marker's name.", required=True)],
            evict_since,
        ),
        define(
            "evict_older_than",
            "Drop every unpinned row whose id is lower than row_id.",
            [Param("row_id", "integer", "Rows before this id go.", required=True, minimum=1)],
            evict_older_than,
        ),
        define(
            "mark_segment",
            "Set (or move) a named marker after the newest row, for evict_since later.",
            [Param("name", "string", "The marker's name.", required=True)],
            mark_segment,
        ),
    ]
    for name, description, planner in strip_specs:
        specs.append(define(name, description, [row_ids], stripper(name, planner)))
    return specs
