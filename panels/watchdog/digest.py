"""The watchdog's digest: what every other panel is doing, as one bus payload. Pure.

Built from plain snapshots the host takes of its panels. Alerts name what a watchdog should
look at first: a turn with many tool calls (a runaway), a turn that has run long, a panel
halted, over budget or failed, and the team-level loops the host found in the message graph
(panels/host/loops/graph.py: ping-pong, acknowledgement storms, broadcast cascades, edge rates),
each naming its edge and message ids. `digest_key` leaves out the figures that move on their own
(ages, rates), so the host sends a digest only when something changed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Activity:
    name: str
    kind: str
    state: str
    turns: int
    tokens: int
    usd: float
    turn_calls: int  # tool calls in the turn now running (0 when idle)
    turn_seconds: float  # how long the running turn has run (0 when idle)
    recent_calls: tuple[str, ...]
    halt: str | None
    tokens_per_minute: float = 0.0


@dataclass(frozen=True)
class DigestSettings:
    runaway_calls: int = 8
    long_turn_seconds: float = 600.0
    recent: int = 5


def alerts(panels: Sequence[Activity], settings: DigestSettings) -> list[str]:
    found = []
    for p in panels:
        if p.turn_calls >= settings.runaway_calls:
            found.append(
                f"runaway: {p.name} has made {p.turn_calls} tool calls in its current turn "
                f"({p.turn_seconds:.0f}s so far)"
            )
        elif p.turn_seconds >= settings.long_turn_seconds:
            found.append(f"long turn: {p.name} has been in one turn for {p.turn_seconds:.0f}s")
        if p.state in ("halted", "over_budget", "failed"):
            found.append(f"{p.state}: {p.name}: {p.halt or 'no reason recorded'}")
    return found


def build_digest(
    panels: Sequence[Activity], settings: DigestSettings, loops: Sequence[str] = ()
) -> dict[str, Any]:
    """The payload of one digest message; `loops` are the host's loop findings, one line each."""
    return {
        "type": "digest",
        "alerts": alerts(panels, settings) + list(loops),
        "panels": [
            {
                "name": p.name,
                "kind": p.kind,
                "state": p.state,
                "turns": p.turns,
                "tokens": p.tokens,
                "usd": round(p.usd, 4),
                "tokens_per_minute": round(p.tokens_per_minute),
                "turn_tool_calls": p.turn_calls,
                "recent_tool_calls": list(p.recent_calls[-settings.recent :]),
                "halt": p.halt,
            }
            for p in panels
        ],
    }


BUSY = frozenset({"thinking", "tool", "approval"})


def digest_key(
    panels: Sequence[Activity], settings: DigestSettings, loops: Sequence[str] = ()
) -> tuple[Any, ...]:
    """What must differ for a new digest to be worth a watchdog turn: a turn finished, a
    panel stopped or started, an alert appeared or went, a loop was found. Not ages or rates,
    not a panel moving between thinking and running a tool, not each further tool call of a
    turn."""
    # An alert counts by what it names ("runaway: eng"), not by its moving figures.
    named = tuple(a.split(" has ")[0] for a in alerts(panels, settings))
    states = tuple(
        (p.name, "busy" if p.state in BUSY else p.state, p.turns, p.halt) for p in panels
    )
    return (states, named, tuple(loops))
