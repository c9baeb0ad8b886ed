"""Window care around a turn: post-turn auto-eviction and read compression, trimming, and the
one-time bulk eviction that recovers from a prompt-too-long answer.

Post-turn care runs after a turn is committed and before the window is trimmed (DESIGN.md
section 4), so the trim sees the slimmer rows. Only trimming deletes rows, and never the row
of a turn in flight or (short of the hard token cap) a protected one; see runtime/window/plan.py.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence

from runtime.instance.config import InstanceConfig
from runtime.instance.debuglog import DebugLog
from runtime.store import AsyncTurnStore, TurnStore
from runtime.tools.compress_reads import compress_reads
from runtime.window import ops as window_ops
from runtime.window.evict import strip_bulk, written_paths
from runtime.window.plan import TrimPlan, WindowCaps, exceeds_caps, plan_trim
from runtime.window.rows import Block, estimate_tokens


def care_due(config: InstanceConfig, turn_blocks: Sequence[Block]) -> bool:
    """Whether `after_turn` has anything to do after a turn of these blocks (when not, the
    trim can go with the commit: `commit_then_trim`)."""
    return bool(config.auto_evict_after_write and written_paths(turn_blocks)) or bool(
        config.compress_repeated_reads
    )


async def after_turn(
    store: AsyncTurnStore, config: InstanceConfig, debug: DebugLog, turn_blocks: Sequence[Block]
) -> None:
    if config.auto_evict_after_write and written_paths(turn_blocks):
        # The same plan as evict_write_pairs over the whole window: the turn's own write
        # bodies and every earlier Read of the files it wrote collapse to their audit shells.
        plan = window_ops.plan_strip_write_pairs(await store.rows())
        if not plan.empty:
            await window_ops.apply_plan(store, plan)
            debug.write("eviction", "auto_evict_after_write", rows=sorted(plan.rewrite))
    if config.compress_repeated_reads:
        rewritten = await compress_reads(store)
        if rewritten:
            debug.write("eviction", "compress_repeated_reads", rows=rewritten)


async def evict_bulk(store: AsyncTurnStore) -> int:
    """Strip thinking, tool bodies and results from every unprotected row; rows changed."""
    changed = 0
    for row in await store.rows():
        if row.pinned or row.status == "in_flight":
            continue
        slim = strip_bulk(row.blocks)
        if slim != row.blocks:
            await store.replace_blocks(row.id, slim, estimate_tokens(json.dumps(slim)))
            changed += 1
    return changed


def window_caps(config: InstanceConfig) -> WindowCaps:
    """The caps an instance's window is trimmed to, from its config."""
    return WindowCaps(
        max_rows=config.max_window_turns,
        max_tokens=config.max_window_tokens,
        row_slack=config.row_cap_slack_when_token_headroom,
        low_water=config.window_low_water,
        protect_compressed=config.preserve_compressed_reads,
    )


def _trim_to_caps(store: TurnStore, caps: WindowCaps) -> TrimPlan | None:
    """The trim on the store's thread, in one hop: the totals (the store keeps them), and only
    when a cap is exceeded every row's stats (no blocks), the plan and the delete."""
    if not exceeds_caps(*store.window_totals(), caps):
        return None
    plan = plan_trim(store.row_stats(), caps)
    if not plan.needed:
        return None
    store.delete_rows(plan.evict_ids)
    return plan


def commit_then_trim(
    store: TurnStore, commit: Callable[[TurnStore], list[int]], caps: WindowCaps | None
) -> tuple[list[int], TrimPlan | None]:
    """A turn's commit, then (with `caps`) the trim, in one hop to the store's thread; the
    trim's plan is then for `note_trim`."""
    ids = commit(store)
    return ids, None if caps is None else _trim_to_caps(store, caps)


async def trim_window(
    store: AsyncTurnStore, config: InstanceConfig, debug: DebugLog
) -> TrimPlan | None:
    """Trim the window to its caps (in steps, runtime/window/plan.py); the plan when rows went.

    Runs after every turn, so it costs one read of the window's totals until a cap is
    exceeded."""
    return await note_trim(store, debug, await store.run(_trim_to_caps, window_caps(config)))


async def note_trim(
    store: AsyncTurnStore, debug: DebugLog, plan: TrimPlan | None
) -> TrimPlan | None:
    """Record a trim that was made (the forced-eviction count, debug.log); its plan."""
    if plan is None:
        return None
    if plan.forced_ids:
        forced = int(await store.get_meta("forced_pinned_evictions") or 0)
        await store.set_meta("forced_pinned_evictions", str(forced + len(plan.forced_ids)))
    debug.write(
        "eviction",
        "window_trim",
        evicted=list(plan.evict_ids),
        forced_pinned=list(plan.forced_ids),
        rows_after=plan.rows_after,
        tokens_after=plan.tokens_after,
    )
    return plan
