"""Trimming from the stats query: the same plan as from full rows, and the same trim through
`trim_window`, which reads the stats only once the window's totals exceed a cap."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from runtime.instance.config import InstanceConfig
from runtime.instance.debuglog import DebugLog
from runtime.store import TurnStore, open_turn_store
from runtime.tools.aftercare import trim_window
from runtime.window.plan import RowStat, WindowCaps, exceeds_caps, plan_trim
from runtime.window.rows import NewRow


def seed(store: TurnStore) -> list[int]:
    """Twelve rows: pinned ones, compression stubs, an in-flight input; tokens vary."""
    rows = []
    for n in range(11):
        rows.append(
            NewRow(
                "user" if n % 2 else "assistant",
                ({"type": "text", "text": f"row {n}"},),
                100 + 37 * n,
                pinned=n in (0, 4),
            )
        )
    ids = store.append(rows)
    for n in (1, 6):
        row = store.row(ids[n])
        assert row is not None
        store.replace_blocks(row.id, row.blocks, row.tokens, compressed=True)
    ids.append(store.begin_turn(NewRow("user", ({"type": "text", "text": "now"},), 50)))
    return ids


CAPS = [
    WindowCaps(max_rows=100, max_tokens=100_000),  # under both caps
    WindowCaps(max_rows=8, max_tokens=100_000),  # the row cap
    WindowCaps(max_rows=8, max_tokens=100_000, row_slack=10),  # stretched by the slack
    WindowCaps(max_rows=100, max_tokens=1_500, low_water=0.5),  # the token cap
    WindowCaps(max_rows=100, max_tokens=1_500, protect_compressed=True),
    WindowCaps(max_rows=100, max_tokens=300, low_water=0.9),  # protected rows forced out
]


@pytest.fixture
def store(tmp_path: Path) -> Iterator[TurnStore]:
    with TurnStore.open(tmp_path / "turns.sqlite") as opened:
        yield opened


def test_stats_query_reports_each_rows_tokens_protection_and_turn_in_flight(
    store: TurnStore,
) -> None:
    """Literal values, not `RowStat.of` again: a misread column or status shows here."""
    ids = seed(store)
    assert store.row_stats() == [
        RowStat(ids[0], 100, pinned=True),
        RowStat(ids[1], 137, compressed=True),
        RowStat(ids[2], 174),
        RowStat(ids[3], 211),
        RowStat(ids[4], 248, pinned=True),
        RowStat(ids[5], 285),
        RowStat(ids[6], 322, compressed=True),
        RowStat(ids[7], 359),
        RowStat(ids[8], 396),
        RowStat(ids[9], 433),
        RowStat(ids[10], 470),
        RowStat(ids[11], 50, in_flight=True),
    ]
    assert [RowStat.of(r) for r in store.rows()] == store.row_stats()


@pytest.mark.parametrize("caps", CAPS)
def test_stats_query_plans_what_full_rows_plan(store: TurnStore, caps: WindowCaps) -> None:
    seed(store)
    stats = store.row_stats()
    plan = plan_trim(stats, caps)
    assert plan == plan_trim([RowStat.of(r) for r in store.rows()], caps)
    assert exceeds_caps(*store.window_totals(), caps) == plan.needed


def test_the_caps_cover_every_kind_of_plan(store: TurnStore) -> None:
    """The cases above are not vacuous: no trim, a trim, a protected row forced out."""
    seed(store)
    plans = [plan_trim(store.row_stats(), caps) for caps in CAPS]
    assert not plans[0].needed and plans[1].needed and plans[5].forced_ids
    assert not plans[2].needed  # the slack lifts the row cap while tokens have headroom


@pytest.mark.anyio
@pytest.mark.parametrize("caps", CAPS)
async def test_trim_window_evicts_what_the_full_row_plan_evicts(
    tmp_path: Path, caps: WindowCaps
) -> None:
    path = tmp_path / "turns.sqlite"
    with TurnStore.open(path) as sync:
        seed(sync)
    config = InstanceConfig(
        max_window_turns=max(2, caps.max_rows),
        max_window_tokens=max(1_000, caps.max_tokens),
        row_cap_slack_when_token_headroom=caps.row_slack,
        window_low_water=caps.low_water,
        preserve_compressed_reads=caps.protect_compressed,
    )
    # The config's floor (1,000 tokens) may loosen a cap: plan against what it holds.
    effective = WindowCaps(
        config.max_window_turns,
        config.max_window_tokens,
        config.row_cap_slack_when_token_headroom,
        config.window_low_water,
        config.preserve_compressed_reads,
    )
    async with open_turn_store(path) as store:
        before = [r.id for r in await store.rows()]
        expected = plan_trim([RowStat.of(r) for r in await store.rows()], effective)
        plan = await trim_window(store, config, DebugLog(tmp_path / "debug.log"))
        after = [r.id for r in await store.rows()]
    if expected.needed:
        assert plan == expected
        assert after == [i for i in before if i not in expected.evict_ids]
    else:
        assert plan is None and after == before
