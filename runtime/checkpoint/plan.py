"""What a rewind changes and which checkpoints go: plain functions over plain data.

`plan_restore` compares an area's files at the checkpoint a rewind goes back to (`target`)
with its files now (`current`, from the checkpoint the rewind takes first) and says, path by
path, what to write back and what to remove. Files neither holds (ignored by a .gitignore,
or excluded: mnemara's own state, secrets) are never touched. A file left out of the target
for its size is left as it is: the target does not know what it was.

`plan_prune` picks the checkpoints to drop by count and age; the newest always stays.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from runtime.checkpoint.model import Changes, Checkpoint, Entry, Files

SAMPLE = 5
DAY = 86_400.0


@dataclass(frozen=True)
class AreaPlan:
    """One area's restore: paths relative to the area, each list sorted."""

    area: str
    restore: tuple[tuple[str, Entry], ...] = ()  # there now, different at the target
    recreate: tuple[tuple[str, Entry], ...] = ()  # gone now, there at the target
    remove: tuple[str, ...] = ()  # there now, not at the target
    left: tuple[str, ...] = ()  # too big to be in the target: left as they are

    @property
    def writes(self) -> tuple[tuple[str, Entry], ...]:
        return self.restore + self.recreate

    def directories(self) -> frozenset[str]:
        """Every directory the target's files live in (relative, "" is the area)."""
        found: set[str] = set()
        for path, _ in self.writes:
            parts = path.split("/")[:-1]
            for depth in range(len(parts) + 1):
                found.add("/".join(parts[:depth]))
        return frozenset(found)


def plan_restore(
    area: str,
    target: Files,
    current: Files,
    *,
    target_capped: Collection[str] = (),
    current_capped: Collection[str] = (),
) -> AreaPlan:
    """How to bring `area` from `current` back to `target`. A path capped now (too big to be
    in `current`) but in the target is restored, since it exists; one capped in the target
    is left alone."""
    capped_then = set(target_capped)
    capped_now = set(current_capped)
    restore: list[tuple[str, Entry]] = []
    recreate: list[tuple[str, Entry]] = []
    for path in sorted(target):
        entry = target[path]
        now = current.get(path)
        if now == entry:
            continue
        if now is not None or path in capped_now:
            restore.append((path, entry))
        else:
            recreate.append((path, entry))
    remove = sorted(p for p in current if p not in target and p not in capped_then)
    left = sorted(p for p in capped_then if p in current or p in capped_now)
    return AreaPlan(area, tuple(restore), tuple(recreate), tuple(remove), tuple(left))


def changes_between(before: Files | None, after: Files) -> Changes:
    """What changed from `before` to `after` (everything is added when there is no before)."""
    if before is None:
        return Changes(added=len(after), sample=tuple(sorted(after)[:SAMPLE]))
    added = [p for p in after if p not in before]
    removed = [p for p in before if p not in after]
    modified = [p for p in after if p in before and before[p] != after[p]]
    sample = tuple(sorted(added + modified + removed)[:SAMPLE])
    return Changes(len(added), len(modified), len(removed), sample)


def plan_prune(
    checkpoints: Sequence[Checkpoint], *, keep: int, max_age_days: float, now: float
) -> list[int]:
    """The numbers of the checkpoints to drop: all but the newest `keep`, and any older than
    `max_age_days`; never the newest one."""
    ordered = sorted(checkpoints, key=lambda c: c.number, reverse=True)
    if not ordered:
        return []
    cutoff = now - max_age_days * DAY
    drop = [
        c.number
        for index, c in enumerate(ordered)
        if index > 0 and (index >= max(keep, 1) or c.at < cutoff)
    ]
    return sorted(drop)
