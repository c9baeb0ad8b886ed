"""Near-duplicate notes: which to archive, and which pairs only look alike.

Replay (runtime/memory/replay.py) calls `find_duplicates` with the notes of its window and
their unit vectors. A note joins the group of the nearest earlier group leader within the
cutoff whose facts it states (runtime/memory/facts.py); the longest (then the oldest) note
of a group is kept, the others are archived. A note within the cutoff of a leader whose
facts differ is a `Conflict`: both stay, and replay drafts the pair to reconcile. A note the
operator restored (`mnemara memory restore`) is never archived again: restoring says keep it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

from runtime.memory.facts import differences
from runtime.memory.model import Atom


@dataclass(frozen=True)
class Duplicate:
    keep: str
    drop: str
    distance: float


@dataclass(frozen=True)
class Conflict:
    """Two notes close enough to be duplicates whose facts differ: both are kept."""

    first: Atom  # the older
    second: Atom
    distance: float
    differences: tuple[str, ...]  # facts.differences(first, second)

    @property
    def proposal(self) -> str:
        pair = f"{self.first.source}\n{self.second.source}"
        return f"wiki_proposals/reconcile-{hashlib.sha256(pair.encode()).hexdigest()[:12]}.md"


def find_duplicates(
    atoms: Sequence[Atom], vectors: Any, limit: float, restored: Collection[str] = ()
) -> tuple[list[Duplicate], list[Conflict], list[int]]:
    """Groups of notes within `limit` (cosine distance) of their group's first note that state its
    facts: the longest (then the oldest) of each is kept. A note that close to a group's
    first note but stating other facts is a conflict with it, and is not archived; nor is a
    note whose source is in `restored`. Returns (duplicates, conflicts, indices kept, in order).

    Grouping is repeated over the notes kept until it finds nothing more, so the kept notes
    hold no duplicates among themselves: the next run, which reads only them, archives
    nothing (the first grouping alone depends on which notes lead a group)."""
    kept = list(range(len(atoms)))
    keeper: dict[int, int] = {}  # dropped -> the note kept in its place
    conflicts: dict[tuple[int, int], Conflict] = {}
    kept_by_hand = set(restored)
    pinned = {i for i, atom in enumerate(atoms) if atom.source in kept_by_hand}
    while True:
        dropped = _group_once(atoms, vectors, limit, kept, keeper, conflicts, pinned)
        if not dropped:
            break
        kept = [i for i in kept if i not in dropped]
    duplicates = []
    for drop in sorted(keeper):
        keep = keeper[drop]
        while keep in keeper:  # kept once, dropped in a later round
            keep = keeper[keep]
        distance = max(0.0, float(1.0 - vectors[keep] @ vectors[drop]))
        duplicates.append(Duplicate(atoms[keep].source, atoms[drop].source, distance))
    return duplicates, list(conflicts.values()), kept


def _group_once(
    atoms: Sequence[Atom],
    vectors: Any,
    limit: float,
    indices: list[int],
    keeper: dict[int, int],
    conflicts: dict[tuple[int, int], Conflict],
    pinned: set[int],
) -> set[int]:
    """One grouping round over `indices`; records what it drops in `keeper` and returns it.
    A pinned note (restored by the operator) stays, whichever note its group keeps."""
    leaders: list[int] = []
    groups: dict[int, list[int]] = {}
    for i in indices:
        joined = False
        if leaders:
            distances = 1.0 - vectors[leaders] @ vectors[i]
            for at in distances.argsort(kind="stable"):
                distance = float(distances[at])
                if distance > limit:
                    break
                leader = leaders[int(at)]
                differ = differences(atoms[leader].text, atoms[i].text)
                if not differ:
                    groups[leader].append(i)
                    joined = True
                    break
                pair = (leader, i)
                conflicts.setdefault(
                    pair, Conflict(atoms[leader], atoms[i], max(0.0, distance), differ)
                )
        if not joined:
            leaders.append(i)
            groups[i] = [i]
    dropped: set[int] = set()
    for leader in leaders:
        group = groups[leader]
        keep = min(group, key=lambda i: (-len(atoms[i].text), i))
        for i in group:
            if i != keep and i not in pinned:
                keeper[i] = keep
                dropped.add(i)
    return dropped
