"""Window trimming: which rows leave the rolling window, as a pure function over row stats.

Trimming works in steps (DESIGN.md section 5). Nothing is dropped until a cap is exceeded;
then the window drops to a low-water mark (a fraction of each cap), so the transcript prefix
the model has cached stays byte-stable for many turns instead of shifting every turn.

Rules, in order:
- the row cap is `max_window_turns`; while the window's tokens are under half the token cap,
  it may stretch by `row_cap_slack_when_token_headroom` rows (the original's slack rule);
- the token cap is `max_window_tokens`;
- the oldest unprotected rows go first; pinned rows (and, when configured, compression stubs)
  are protected; the row of the turn in flight is never dropped;
- only if the window is still over its token cap with every unprotected row gone are protected
  rows force-evicted, oldest first, and counted so the operator can see it happened.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from operator import attrgetter
from typing import NamedTuple

from runtime.window.rows import Row


@dataclass(frozen=True)
class WindowCaps:
    max_rows: int
    max_tokens: int
    row_slack: int = 0
    low_water: float = 0.75
    protect_compressed: bool = False


class RowStat(NamedTuple):
    """What trimming needs of one row (a tuple: the trim plans over every row of the window,
    and a frozen dataclass took four times as long to build)."""

    id: int
    tokens: int
    pinned: bool = False
    compressed: bool = False
    in_flight: bool = False

    @classmethod
    def of(cls, row: Row) -> RowStat:
        # tuple.__new__ skips the generated __new__ and its defaults: a third of the time.
        return tuple.__new__(
            cls, (row.id, row.tokens, row.pinned, row.compressed, row.status == "in_flight")
        )


@dataclass(frozen=True)
class TrimPlan:
    evict_ids: tuple[int, ...]
    forced_ids: tuple[int, ...]  # protected rows that had to go (subset of evict_ids)
    rows_before: int
    tokens_before: int
    rows_after: int
    tokens_after: int

    @property
    def needed(self) -> bool:
        return bool(self.evict_ids)


def row_cap_at(tokens: int, caps: WindowCaps) -> int:
    """The effective row cap of a window holding `tokens` tokens: stretched by the slack while
    tokens have headroom."""
    if caps.row_slack > 0 and tokens < caps.max_tokens // 2:
        return caps.max_rows + caps.row_slack
    return caps.max_rows


def exceeds_caps(rows: int, tokens: int, caps: WindowCaps) -> bool:
    """Whether a window of `rows` rows and `tokens` tokens is over its caps: the whole of what
    decides that a trim is due, so a caller holding only the totals can skip planning."""
    return rows > row_cap_at(tokens, caps) or tokens > caps.max_tokens


_tokens_of = attrgetter("tokens")


def plan_trim(stats: Sequence[RowStat], caps: WindowCaps) -> TrimPlan:
    """Decide which rows to drop. `stats` are in window order (oldest first)."""
    n_before = len(stats)
    t_before = sum(map(_tokens_of, stats))
    if not exceeds_caps(n_before, t_before, caps):
        return TrimPlan((), (), n_before, t_before, n_before, t_before)

    target_rows = max(1, int(row_cap_at(t_before, caps) * caps.low_water))
    target_tokens = max(1, int(caps.max_tokens * caps.low_water))

    def protected(s: RowStat) -> bool:
        return s.pinned or (caps.protect_compressed and s.compressed)

    at: list[int] = []  # the evicted rows' places in the window
    rows, tokens = n_before, t_before

    def satisfied() -> bool:
        return rows <= target_rows and tokens <= target_tokens

    for place, s in enumerate(stats):
        if satisfied():
            break
        if s.in_flight or protected(s):
            continue
        at.append(place)
        rows -= 1
        tokens -= s.tokens

    forced: list[int] = []
    # Protected rows give way only to the hard token cap, never to the row cap or low water.
    # The pass above took unprotected rows only, so this one cannot take a row twice.
    for place, s in enumerate(stats):
        if tokens <= caps.max_tokens:
            break
        if s.in_flight or not protected(s):
            continue
        at.append(place)
        forced.append(s.id)
        rows -= 1
        tokens -= s.tokens

    # In window order, by sorting the few places rather than walking the whole window again.
    ordered = tuple(stats[place].id for place in sorted(at))
    return TrimPlan(ordered, tuple(forced), n_before, t_before, rows, tokens)
