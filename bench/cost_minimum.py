"""What a workload's prompts would cost at the least: the physical minimum the cost benchmark
compares our layout against.

The minimum is computed from our own requests (the same content the model saw, token for
token), billed as if each piece of content were written to the cache exactly once and read
every later time it is sent:

- the first request of the session writes everything;
- the first request of a turn reads what earlier turns sent (the transcript: in the minimum,
  last turn's native tool calls and results count as already sent, even though our layout
  sends them again as rendered rows) and writes only what is new: the content after our
  cache marker (slots, inbox, the input, and the CLI's own trailing text);
- after the window was trimmed, the first request writes everything after the system prompt
  again (the prefix changed: no cache can avoid that, so the minimum pays it too);
- a later request of the same turn reads the request before it and writes what was added
  (the model's tool call and its result);
- the billing header the CLI puts in the system prompt is plain input, as for everyone.

Writes weigh 1.25 when turns come less than five minutes apart and 2.0 (one-hour entries)
otherwise, so the minimum never pays a rewrite for a pause. It ignores the service's
minimum cacheable length and lookback window: it is a floor, not a layout.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from runtime.rehearsal import RequestRecord
from runtime.rehearsal.layout import Layout

READ_WEIGHT = 0.1
WRITE_5M_WEIGHT = 1.25
WRITE_1H_WEIGHT = 2.0
FIVE_MINUTES = 300.0


@dataclass(frozen=True)
class MinimumTurn:
    read: int
    written: int
    uncached: int
    write_weight: float

    @property
    def billed(self) -> float:
        return self.uncached + READ_WEIGHT * self.read + self.write_weight * self.written


def _keyed_tokens(layout: Layout) -> int:
    return layout.total_tokens - layout.unkeyed_tokens


def _head_tokens(layout: Layout) -> int:
    """Tokens of the tools and the system prompt: what a trim leaves in place."""
    return sum(u.tokens for u in layout.units if not u.label.startswith("messages"))


def _tail_tokens(layout: Layout) -> int | None:
    """Tokens after our cache marker (the first breakpoint among the messages), or None."""
    units = layout.units
    for i, unit in enumerate(units):
        if unit.label.startswith("messages") and unit.ttl is not None:
            return sum(u.tokens for u in units[i + 1 :])
    return None


def minimum_turn(
    records: Sequence[RequestRecord], *, first: bool, after_trim: bool, gap: float
) -> MinimumTurn:
    """The minimum billing of one turn's requests (in order)."""
    weight = WRITE_5M_WEIGHT if gap < FIVE_MINUTES else WRITE_1H_WEIGHT
    read = written = uncached = 0
    previous: Layout | None = None
    for record in records:
        if record.account is None:
            continue
        layout = record.account.layout
        keyed = _keyed_tokens(layout)
        uncached += layout.unkeyed_tokens
        if previous is None:
            tail = _tail_tokens(layout)
            if first or tail is None:
                new = keyed
            elif after_trim:
                new = keyed - _head_tokens(layout)
            else:
                new = tail
        else:
            new = max(0, keyed - _keyed_tokens(previous))
        written += new
        read += keyed - new
        previous = layout
    return MinimumTurn(read, written, uncached, weight)
