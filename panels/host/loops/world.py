"""What a turn did to the world, as the team-loop rules judge it: measured, not a boolean.

The guard measures a panel's world before each tool call and at the end of a turn
(runtime/guard/world.py: the content hash of each file the calls named, the git state of
the working directory, the hash of each slot). `WorldTap` sits between the guard and its
probe and keeps, for the turn in flight, the first and the last of those measurements;
`measure_change` turns them into a `WorldChange`: the parts that changed, each with its
state before and after, sorted into work and bookkeeping.

Bookkeeping is a change that records activity rather than doing work; it never counts as
progress:
- a slot (the panel's notes): always;
- a file whose path matches one of `bookkeeping` (`LoopSettings.bookkeeping`: logs, pid and
  lock files, stamps, heartbeat and timestamp files, caches, editor backups);
- a file the git state does not see: inside a repository, a file whose change leaves git's
  state unchanged is ignored by git or lies outside the repository (a log, a cache, scratch);
- the git state itself, when the only named files that changed are bookkeeping files (the
  git state moved because of them).
Test outcomes are observations, not changes: they are not parts.

`advances` then says whether a change is progress on a chain: some work part ends in a state
not already seen on that chain (the states every earlier turn of the chain started from and
ended in), so putting a file back as it was, or a round of edits that returns the tree to a
state the chain already had, is no progress. A part's state is kept as a short digest of
(part, content hash), so a chain's history is small and can be stored.

With the sentinel off nothing is measured: a turn then changed the world when a mutating tool
succeeded (the guard's boolean), and such a change counts as progress, since it cannot be
compared with anything.
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runtime.guard.bookkeeping import is_bookkeeping
from runtime.guard.sentinel import WorldState
from runtime.guard.world import WorldProbe

GIT = "git"  # the part that is the repository's state
SLOT = "slot:"  # the prefix of a slot's part


@dataclass(frozen=True)
class WorldChange:
    """One turn's change. `work`: (part, before, after) of each part whose change counts (a
    file's path, or `GIT`); `bookkeeping`: the parts that changed but are bookkeeping;
    `measured` False: nothing was measured, and `unmeasured` is the guard's boolean."""

    work: tuple[tuple[str, str, str], ...] = ()
    bookkeeping: tuple[str, ...] = ()
    measured: bool = True
    unmeasured: bool = False

    @property
    def any(self) -> bool:
        """Anything changed at all, bookkeeping and reverts included (the boolean the rules
        took as progress before issue 29)."""
        return bool(self.work or self.bookkeeping) or self.unmeasured

    @property
    def states(self) -> tuple[str, ...]:
        """The digests of the states the work parts started from and ended in."""
        keys = [state_key(p, d) for p, before, after in self.work for d in (before, after)]
        return tuple(dict.fromkeys(keys))

    def summary(self) -> str:
        """A few words for a verdict: how many parts of which kind changed."""
        if not self.measured:
            return "a mutating tool succeeded (not measured)" if self.unmeasured else "nothing"
        files = sum(1 for p, _, _ in self.work if p != GIT)
        said = [f"{files} file(s)"] if files else []
        said += ["the git state"] if any(p == GIT for p, _, _ in self.work) else []
        said += [f"{len(self.bookkeeping)} bookkeeping part(s)"] if self.bookkeeping else []
        return ", ".join(said) or "nothing"


NO_CHANGE = WorldChange()


def unmeasured(changed: bool) -> WorldChange:
    """The change of a turn whose world was not measured (the sentinel is off)."""
    return WorldChange(measured=False, unmeasured=changed)


def state_key(part: str, digest: str) -> str:
    """A part's state as a short digest (16 hex digits)."""
    return hashlib.blake2b(f"{part}\0{digest}".encode(), digest_size=8).hexdigest()


def advances(change: WorldChange, seen: Collection[str]) -> bool:
    """Whether `change` is progress on a chain that has seen the states `seen`: some work
    part ends in a state the chain has not seen (unmeasured: the guard's boolean)."""
    if not change.measured:
        return change.unmeasured
    return any(
        before != after and state_key(part, after) not in seen
        for part, before, after in change.work
    )


def measure_change(
    first: WorldState,
    last: WorldState,
    first_files: Mapping[str, str],
    bookkeeping: Sequence[str],
) -> WorldChange:
    """The change from `first` to `last` (a turn's first and last measurement), each file
    compared with its hash when the turn first measured it (`first_files`). See the module
    docstring for what is bookkeeping. Pure."""
    work: list[tuple[str, str, str]] = []
    kept: list[str] = []
    changed = [
        (path, first_files.get(path, digest), digest)
        for path, digest in last.files_written
        if first_files.get(path, digest) != digest
    ]
    git_moved = first.git_tree != last.git_tree
    git_blind = first.git_tree is not None and last.git_tree is not None and not git_moved
    for path, before, after in changed:
        if is_bookkeeping(path, bookkeeping) or git_blind:
            kept.append(path)
        else:
            work.append((path, before, after))
    if git_moved:
        theirs = bool(changed) and not work  # only bookkeeping files changed
        if theirs:
            kept.append(GIT)
        else:
            work.append((GIT, first.git_tree or "none", last.git_tree or "none"))
    before_slots = dict(first.slots)
    for label, digest in last.slots:
        if before_slots.get(label) != digest:
            kept.append(SLOT + label)
    kept += [SLOT + label for label in before_slots if label not in dict(last.slots)]
    return WorldChange(tuple(work), tuple(dict.fromkeys(kept)))


class WorldTap:
    """A panel's world probe, seen through: the guard measures through it as before, and it
    keeps the turn's first measurement, each file's first hash and the last measurement,
    until `take` hands them over as the turn's `WorldChange` and starts the next turn."""

    def __init__(self, probe: WorldProbe) -> None:
        self.probe = probe
        self._first: WorldState | None = None
        self._last: WorldState | None = None
        self._files: dict[str, str] = {}

    @property
    def root(self) -> Path:
        return self.probe.root

    async def measure(self, touched: Sequence[str]) -> WorldState:
        state = await self.probe.measure(touched)
        if self._first is None:
            self._first = state
        for path, digest in state.files_written:
            self._files.setdefault(path, digest)
        self._last = state
        return state

    def take(self, bookkeeping: Sequence[str]) -> WorldChange | None:
        """The change since the last `take` (None: nothing was measured since: a turn that
        made no call, or a guard that does not measure)."""
        first, last, files = self._first, self._last, self._files
        self._first, self._last, self._files = None, None, {}
        if first is None or last is None:
            return None
        return measure_change(first, last, files, bookkeeping)

    def __getattr__(self, name: str) -> Any:
        # Whatever else the probe offers (the guard may ask more of it than `measure`) is
        # the probe's own: the tap only watches.
        if name == "probe":  # not set yet (a copy being made): no recursion
            raise AttributeError(name)
        return getattr(self.probe, name)
