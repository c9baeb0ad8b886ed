"""The host's limit on warm spares, and who gets one.

Spares cost memory (a CLI each, and a sandbox's processes), so a host keeps at most `limit`
alive at once, shared by its panels' drivers. The rule: spares go to the panels that turned
most recently. A driver asks with its `rank` (the time its panel's last turn ended, or began
waiting); under the limit it gets a place; at the limit it takes the place of the ready spare
with the lowest rank below its own, which is killed first (so the count never goes over);
else it is refused. A place being built is never taken: its builder holds it until the spare
is ready or has failed. Pure bookkeeping, synchronous: the callers kill and build.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

H = TypeVar("H")


@dataclass
class _Place:
    rank: float
    building: bool = True


class SparePool(Generic[H]):
    """At most `limit` spares among the holders (drivers); see the module docstring."""

    def __init__(self, limit: int) -> None:
        self.limit = max(0, limit)
        self._places: dict[H, _Place] = {}
        self.refused = 0  # requests turned down at the limit
        self.on_change: Callable[[], None] | None = None  # told after every change (tests)

    def __len__(self) -> int:
        return len(self._places)

    def holds(self, holder: H) -> bool:
        return holder in self._places

    def _changed(self) -> None:
        if self.on_change is not None:
            self.on_change()

    def admit(self, holder: H, rank: float) -> tuple[bool, H | None]:
        """(admitted, the holder whose spare must be killed first, if any). An admitted
        holder's place is marked as being built until `ready` or `release`."""
        found = self._admit(holder, rank)
        self._changed()
        return found

    def _admit(self, holder: H, rank: float) -> tuple[bool, H | None]:
        place = self._places.get(holder)
        if place is not None:
            place.rank, place.building = rank, True
            return True, None
        if len(self._places) < self.limit:
            self._places[holder] = _Place(rank)
            return True, None
        ready = [(p.rank, i, h) for i, (h, p) in enumerate(self._places.items()) if not p.building]
        below = [entry for entry in ready if entry[0] < rank]
        if not below:
            self.refused += 1
            return False, None
        _, _, victim = min(below)
        del self._places[victim]
        self._places[holder] = _Place(rank)
        return True, victim

    def ready(self, holder: H) -> None:
        place = self._places.get(holder)
        if place is not None:
            place.building = False
        self._changed()

    def release(self, holder: H) -> None:
        self._places.pop(holder, None)
        self._changed()
