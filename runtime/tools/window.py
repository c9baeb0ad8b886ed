"""The agent's view of its own window: slots, pins, listing, tuning and `inspect_context`.

Row ids are the ones the transcript shows (`[row 12 · user]`). Listing marks the input row of
the turn in flight, which the eviction tools refuse to delete.
"""

from __future__ import annotations

from runtime.tools.context import ToolContext
from runtime.tools.params import Args, Param, define, ok, refuse
from runtime.tools.report import ContextParts, context_report
from runtime.turn.driver import ToolOutput, ToolSpec
from runtime.window.inspect import describe_row
from runtime.window.rows import Row
from sqlitekit.jsonload import load_json

# tune_window parameter -> config field. The agent may reshape its window, nothing else.
TUNABLE = {
    "max_window_turns": "max_window_turns",
    "max_window_tokens": "max_window_tokens",
    "row_cap_slack": "row_cap_slack_when_token_headroom",
    "low_water": "window_low_water",
}


def list_rows(rows: list[Row], in_flight: int | None) -> list[str]:
    return [
        describe_row(r) + ("   <- this turn (in flight)" if r.id == in_flight else "") for r in rows
    ]


def window_tools(ctx: ToolContext) -> list[ToolSpec]:
    store = ctx.store

    async def upsert_slot(a: Args) -> ToolOutput:
        slot = await store.upsert_slot(a["label"], a["role"], a["content"], a["position"])
        return ok(f"slot {slot.label!r} = {len(slot.content)} chars at position {slot.position}")

    async def pin_row(a: Args) -> ToolOutput:
        await store.set_pinned(a["row_id"], True)
        if a["label"]:
            await store.set_label(a["row_id"], a["label"])
        return ok(f"row {a['row_id']} pinned; trimming passes over it")

    async def unpin_row(a: Args) -> ToolOutput:
        await store.set_pinned(a["row_id"], False)
        return ok(f"row {a['row_id']} unpinned; it can be trimmed again")

    async def list_pinned(a: Args) -> ToolOutput:
        rows = [r for r in await store.rows() if r.pinned]
        lines = list_rows(rows, ctx.in_flight_row) or ["(no pinned rows)"]
        for slot in await store.slots():
            lines.append(f"slot {slot.position}: {slot.label} ({slot.role}) {slot.content[:80]!r}")
        return ok("\n".join(lines))

    async def list_window(a: Args) -> ToolOutput:
        rows = await store.rows()
        shown = rows[-a["last"] :]
        head = f"{len(rows)} rows in the window; the last {len(shown)}:"
        return ok("\n".join([head, *list_rows(shown, ctx.in_flight_row)]))

    async def tune_window(a: Args) -> ToolOutput:
        changes = {TUNABLE[k]: v for k, v in a.items() if v is not None}
        if not changes:
            return refuse(f"tune_window: give at least one of {', '.join(TUNABLE)}")
        try:
            ctx.update_config(**changes)
        except ValueError as exc:  # pydantic's ValidationError is a ValueError
            return refuse(f"tune_window: not applied: {exc}")
        shown = ", ".join(f"{k}={getattr(ctx.config, k)}" for k in changes)
        return ok(f"window tuned (saved in config.json): {shown}")

    async def inspect_context(a: Args) -> ToolOutput:
        meta_usage = await store.get_meta("last_usage")
        meta_halt = await store.get_meta("halt")
        parts = ContextParts(
            role_text=ctx.role_text(),
            tools=ctx.tools,
            rows=await store.rows(),
            slots=await store.slots(),
            manifest=await ctx.manifest_text(),
            config=ctx.config,
            last_usage=load_json(meta_usage) if meta_usage else None,
            spend=ctx.spend(),
            halt=load_json(meta_halt) if meta_halt else None,
        )
        return ok(context_report(parts))

    row_id = Param("row_id", "integer", "A row id as the transcript shows it.", required=True)
    return [
        define(
            "upsert_slot",
            "Set a labelled value that is updated in place (health, deploy status, current "
            "plan). Slots are always in context, after the transcript, and never trimmed.",
            [
                Param(
                    "label", "string", "The slot's name; the same label updates it.", required=True
                ),
                Param("content", "string", "The value.", required=True),
                Param("role", "string", "Who the value speaks for.", default="system"),
                Param("position", "integer", "Where it goes among the slots (0 first).", minimum=0),
            ],
            upsert_slot,
        ),
        define(
            "pin_row",
            "Protect a row from trimming (optionally with a label).",
            [row_id, Param("label", "string", "A short label shown with the row.", default="")],
            pin_row,
        ),
        define("unpin_row", "Let a pinned row be trimmed again.", [row_id], unpin_row),
        define("list_pinned", "List pinned rows and the slots.", [], list_pinned),
        define(
            "list_window",
            "List the window's rows: id, role, flags, tokens and a preview.",
            [Param("last", "integer", "How many of the newest rows.", minimum=1, default=20)],
            list_window,
        ),
        define(
            "tune_window",
            "Change the rolling window's caps; saved to config.json, used from the next trim.",
            [
                Param("max_window_turns", "integer", "Row cap.", minimum=2, maximum=100_000),
                Param("max_window_tokens", "integer", "Token cap.", minimum=1_000),
                Param("row_cap_slack", "integer", "Extra rows while tokens are low.", minimum=0),
                Param("low_water", "number", "Fraction of a cap a trim drops to (0.1-1)."),
            ],
            tune_window,
        ),
        define(
            "inspect_context",
            "Where this request's input tokens go (role doc, tool schemas, pinned rows, slots, "
            "window, manifest), the last reported usage, and the session's spend and limits.",
            [],
            inspect_context,
        ),
    ]
