"""Coalescing a panel's text deltas into few `Said` events. Pure, with an injected clock.

The model streams text in small pieces; writing each as an event would flood the log and
its viewers. Deltas of one panel are joined until another event of that panel arrives (so
order is kept), the text passes `max_chars`, or `max_age` seconds passed since its first
piece (`due`); then they go out as one `Said` event.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from panels.hostdb.catalogue import HostEvent, Said

Stamped = tuple[float, HostEvent]


@dataclass
class _Pending:
    parts: list[str] = field(default_factory=list)
    size: int = 0
    since: float = 0.0


class Coalescer:
    def __init__(self, *, max_chars: int = 2_000, max_age: float = 0.25) -> None:
        self.max_chars = max_chars
        self.max_age = max_age
        self._text: dict[str | None, _Pending] = {}

    def text(self, panel: str | None, piece: str, now: float) -> list[Stamped]:
        """Add a delta; returns the events that are ready now (when the text is full)."""
        pending = self._text.setdefault(panel, _Pending(since=now))
        pending.parts.append(piece)
        pending.size += len(piece)
        if pending.size >= self.max_chars:
            return [self._flush(panel, now)]
        return []

    def event(self, now: float, event: HostEvent) -> list[Stamped]:
        """Any other event: the panel's pending text goes out first, to keep the order."""
        out = [self._flush(event.panel, now)] if event.panel in self._text else []
        return [*out, (now, event)]

    @property
    def pending(self) -> bool:
        """Whether any text waits to go out."""
        return bool(self._text)

    def due(self, now: float) -> list[Stamped]:
        """Text that has waited `max_age`."""
        stale = [p for p, pend in self._text.items() if now - pend.since >= self.max_age]
        return [self._flush(p, now) for p in stale]

    def drain(self, now: float) -> list[Stamped]:
        return [self._flush(p, now) for p in list(self._text)]

    def _flush(self, panel: str | None, now: float) -> Stamped:
        pending = self._text.pop(panel)
        # Stamped when it goes out, so the log's times never run backwards.
        return max(now, pending.since), Said(panel=panel, text="".join(pending.parts))
