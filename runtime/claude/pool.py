"""The host's limit on warm spares, and who gets one.

Spares cost memory (a CLI each, and a sandbox's processes), so a host keeps at most `limit`
alive at once, shared by its panels' drivers. The rule: spares go to the panels expected to
turn soonest. A driver asks with its `due`: when its panel is expected to turn next (the
host's guess: its last turn's end plus its usual gap between turns; None when it has no
such history). A place's claim is how close its due is to now (`closeness`): a panel due in
a second, or overdue by a second, comes before one due in a minute or a minute overdue,
and a panel with no due comes last; it is computed at each comparison, so a spare's claim
grows as its panel's turn comes near. Under the limit a driver gets a place; at the limit
it takes the place of the ready spare with the weakest claim below its own, which is killed
first (so the count never goes over); else it is refused and remembered. A place being
built is never taken: its builder holds it until the spare is ready or has failed. When a
place is freed (a spare taken by its turn, discarded or failed), the refused driver with
the strongest claim is told at once (its `wake`), so a taken spare is replaced without
waiting for that panel's next idle check. Pure bookkeeping, synchronous: the callers kill
and build.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

H = TypeVar("H")

Wake = Callable[[], None]


@dataclass
class _Place:
    due: float | None
    wake: Wake | None
    building: bool = True


def closeness(due: float | None, now: float) -> float:
    """A claim's strength: minus the distance of `due` from `now`; no due is the weakest."""
    return -math.inf if due is None else -abs(due - now)


class SparePool(Generic[H]):
    """At most `limit` spares among the holders (drivers); see the module docstring."""

    def __init__(self, limit: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.limit = max(0, limit)
        self.clock = clock  # the clock of the dues (the host's)
        self._places: dict[H, _Place] = {}
        self._refused: dict[H, tuple[float | None, Wake]] = {}  # turned down, to be told
        self.refused = 0  # requests turned down at the limit
        self.on_change: Callable[[], None] | None = None  # told after every change (tests)

    def __len__(self) -> int:
        return len(self._places)

    def holds(self, holder: H) -> bool:
        return holder in self._places

    def _changed(self) -> None:
        if self.on_change is not None:
            self.on_change()

    def admit(
        self, holder: H, due: float | None, wake: Wake | None = None
    ) -> tuple[bool, H | None]:
        """(admitted, the holder whose spare must be killed first, if any). An admitted
        holder's place is marked as being built until `ready` or `release`. A refused one
        with a `wake` is called when a place is freed and its claim is the strongest."""
        self._refused.pop(holder, None)
        found = self._admit(holder, due, wake)
        self._changed()
        return found

    def _admit(self, holder: H, due: float | None, wake: Wake | None) -> tuple[bool, H | None]:
        place = self._places.get(holder)
        if place is not None:
            place.due, place.wake, place.building = due, wake, True
            return True, None
        if len(self._places) < self.limit:
            self._places[holder] = _Place(due, wake)
            return True, None
        now = self.clock()
        claim = closeness(due, now)
        ready = [
            (closeness(p.due, now), i, h)
            for i, (h, p) in enumerate(self._places.items())
            if not p.building
        ]
        below = [entry for entry in ready if entry[0] < claim]
        if not below:
            self.refused += 1
            if wake is not None:
                self._refused[holder] = (due, wake)
            return False, None
        _, _, victim = min(below)
        lost = self._places.pop(victim)
        if lost.wake is not None:  # it may get a place back when one is freed
            self._refused[victim] = (lost.due, lost.wake)
        self._places[holder] = _Place(due, wake)
        return True, victim

    def ready(self, holder: H) -> None:
        place = self._places.get(holder)
        if place is not None:
            place.building = False
        self._changed()

    def release(self, holder: H) -> None:
        freed = self._places.pop(holder, None) is not None
        if freed and self._refused and len(self._places) < self.limit:
            now = self.clock()
            best = max(self._refused, key=lambda h: closeness(self._refused[h][0], now))
            _, wake = self._refused.pop(best)
            wake()
        self._changed()

    def forget(self, holder: H) -> None:
        """`holder` wants no place any more (its panel stopped, paused or halted)."""
        self._refused.pop(holder, None)
        self.release(holder)
