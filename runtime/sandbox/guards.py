"""The mounts that lay out a panel's areas inside the sandbox and keep its guards in place.

A read-only bind covers one path, but the directory holding it can be renamed, and the bind
goes with it: `mv .git x && mkdir .git` leaves a fresh `.git` beside the old protection. So
every directory between an area's root and a guarded path is bound onto itself; a mount
point cannot be renamed or removed (EBUSY), and neither can the guarded path, itself one.

A name that does not exist yet cannot be bound, so it could be created. Two answers:
- the home directory, when a writable area holds it: its top level, `.config` and `.local`
  are read-only and what is in them is bound writable again, except the protected names; so
  nothing new appears beside the startup files (a new file at the top of home is refused);
- every other writable root: `.envrc` and `.git`, when absent, get an empty placeholder
  (placeholders.py) that is bound read-only like an existing one.

Mounts apply in order and a later one covers what is under it, and bubblewrap takes each
source from the machine, not from the sandbox built so far. So all of them are emitted as
one sequence sorted by depth: a shallower mount never comes after a deeper one it would
cover. The area a path is in decides whether it is writable: the deepest area that holds it.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from runtime.policy.paths import (
    CONFIG_SUBDIRS,
    SECRET_CONFIG_SUBDIRS,
    SECRET_DIRS,
    SECRET_FILES,
    SHELL_STARTUP,
)
from runtime.policy.stores import DATABASE_SIBLINGS, TEAM_DATABASES
from runtime.sandbox.settings import SandboxSettings

# Names at the top of home that a panel must not create or change; `.config` and `.local`
# are opened one level further (HOME_SUBDIRS).
HOME_PROTECTED = SHELL_STARTUP | SECRET_DIRS | SECRET_FILES | {".claude", ".mnemara"}
HOME_SUBDIRS = {
    ".config": CONFIG_SUBDIRS | SECRET_CONFIG_SUBDIRS,
    ".local": frozenset({"bin"}),
}
# Order among mounts of equal depth: areas first (where two name one path, the read-only one
# comes last and wins: home's top level over the working directory that is home, a readable
# area over the home entry that holds it), then what pins and guards them.
_WRITABLE, _READ_ONLY, _PIN, _FROZEN, _HIDDEN = range(5)


@dataclass(frozen=True)
class Area:
    path: Path
    writable: bool


@dataclass(frozen=True)
class _Mount:
    path: Path
    rank: int
    args: tuple[str, ...]

    @property
    def key(self) -> tuple[int, int]:
        return len(self.path.parts), self.rank


def real(path: Path) -> Path:
    return Path(os.path.realpath(path))


def area_mounts(
    readable: Sequence[Path],
    writable: Sequence[Path],
    settings: SandboxSettings,
    user_home: Path,
    state_home: Path | None,
) -> list[str]:
    """The bubblewrap options for the areas (resolved, existing) and everything guarded in
    them, in the order they must apply."""
    roots = [Area(p, False) for p in readable] + [Area(p, True) for p in writable]
    areas = sorted({*roots, *_home_areas(roots, real(user_home))}, key=_order)
    mounts = [_Mount(a.path, _WRITABLE if a.writable else _READ_ONLY, _bind(a)) for a in areas]
    hidden, frozen = _guarded(roots, settings, user_home, state_home)
    guarded = {**{p: _FROZEN for p in frozen}, **{p: _HIDDEN for p in hidden}}
    for path, rank in guarded.items():
        if _area_of(path, areas) is None:
            continue
        if rank == _FROZEN:
            mounts.append(_Mount(path, rank, ("--ro-bind", str(path), str(path))))
        elif path.is_dir():
            mounts.append(_Mount(path, rank, ("--tmpfs", str(path), "--remount-ro", str(path))))
        else:
            mounts.append(_Mount(path, rank, ("--ro-bind", "/dev/null", str(path))))
    for pin in sorted(_pins(guarded, areas)):
        mounts.append(_Mount(pin, _PIN, ("--bind", str(pin), str(pin))))
    return [arg for mount in sorted(mounts, key=lambda m: m.key) for arg in mount.args]


def _order(area: Area) -> tuple[int, bool]:
    return len(area.path.parts), not area.writable


def _bind(area: Area) -> tuple[str, ...]:
    return ("--bind" if area.writable else "--ro-bind", str(area.path), str(area.path))


def _home_areas(roots: Sequence[Area], home: Path) -> list[Area]:
    """Home's top level, `.config` and `.local` read-only, what they hold writable again
    except the protected names; none when no writable area holds home."""
    holder = _area_of(home, roots)
    if holder is None or not holder.writable:
        return []
    found = [Area(home, False)]
    for child in _children(home):
        if child.name in HOME_PROTECTED:
            continue
        protected = HOME_SUBDIRS.get(child.name)
        if protected is None:
            found.append(Area(child, True))
            continue
        found.append(Area(child, False))
        found += [Area(c, True) for c in _children(child) if c.name not in protected]
    return found


def _children(directory: Path) -> list[Path]:
    """What a directory holds that a bind can cover: real files and directories (a symlink
    stays a symlink, which leads wherever the areas let it)."""
    if not directory.is_dir() or directory.is_symlink():
        return []
    try:
        entries = sorted(directory.iterdir())
    except OSError:
        return []
    return [e for e in entries if not e.is_symlink() and (e.is_dir() or e.is_file())]


def _guarded(
    roots: Sequence[Area], settings: SandboxSettings, user_home: Path, state_home: Path | None
) -> tuple[set[Path], set[Path]]:
    """(hidden, frozen): resolved, existing paths to cover inside the areas."""
    hidden: set[Path] = set()
    frozen: set[Path] = set()
    for root in (a.path for a in roots):
        hidden.update(root / name for name in SECRET_DIRS | SECRET_FILES)
        hidden.update(root / ".config" / name for name in SECRET_CONFIG_SUBDIRS)
        for db in TEAM_DATABASES:
            hidden.update(root / (db + sibling) for sibling in DATABASE_SIBLINGS)
    for root in (a.path for a in roots if a.writable):
        frozen.update(root / name for name in SHELL_STARTUP)
        frozen.update(root / ".config" / name for name in CONFIG_SUBDIRS)
        frozen.update((root / ".git" / "hooks", root / ".git" / "config", root / ".local" / "bin"))
        frozen.update(_git_placeholder(root))
    frozen.update(settings.read_only)
    hidden.update(settings.masked)
    if state_home is not None:
        hidden.add(state_home)
    hidden.add(user_home / ".claude")
    covered = _existing(hidden)
    # A path under a hidden one is not there to guard (a role doc in MNEMARA_HOME, which a
    # working directory at home holds): binding it would make its parents inside the
    # hidden, read-only folder, which bubblewrap cannot, and a pin would show them again.
    return covered, {p for p in _existing(frozen) if not any(p.is_relative_to(h) for h in covered)}


def _git_placeholder(root: Path) -> list[Path]:
    """`.git` itself when it is not a repository's own directory: a file (a worktree's or
    submodule's pointer, which could be re-pointed) or the empty placeholder."""
    git = root / ".git"
    if git.is_file() and not git.is_symlink():
        return [git]
    if git.is_dir() and not git.is_symlink() and not any(git.iterdir()):
        return [git]
    return []


def _existing(paths: Iterable[Path]) -> set[Path]:
    return {real(p) for p in paths if p.exists()}


def _area_of(path: Path, areas: Sequence[Area]) -> Area | None:
    """The area that decides what `path` is inside: the deepest holding it, read-only
    before writable where two name one path (the order the mounts apply in)."""
    holding = [a for a in areas if path.is_relative_to(a.path)]
    return max(holding, key=_order, default=None)


def _pins(guarded: dict[Path, int], areas: Sequence[Area]) -> set[Path]:
    """The directories between each guarded path and its area's root, where they are
    writable (a read-only directory cannot be renamed anyway) and not guarded themselves."""
    pins: set[Path] = set()
    for path in guarded:
        area = _area_of(path, areas)
        if area is None:
            continue
        for parent in path.parents:
            if parent == area.path or not parent.is_relative_to(area.path):
                break
            where = _area_of(parent, areas)
            if where is not None and where.writable and parent not in guarded:
                pins.add(parent)
    return pins
