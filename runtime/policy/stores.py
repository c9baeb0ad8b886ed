"""The host's databases and the instances' stores: the files that no tool may write.

A write there would not edit a document, it would forge the host's own records: a row in a
bus database is a message from a peer, a row in host.sqlite an event or an operator's
control, and an instance's turns.sqlite, config.json and permissions.json are a panel's
window, settings and permissions. So writes are denied, not asked (DESIGN.md section 6);
reading them is judged like any other protected path.

The stores, for each state root <home> (MNEMARA_HOME) and each instance directory <dir>
(any entry of <home> not starting with `_`, and the current instance's own directory):

    <home>/_teams/<team>/bus.sqlite, host.sqlite     a team's databases
    <dir>/turns.sqlite                               an instance's window
    <dir>/config.json, <dir>/permissions.json        an instance's settings and policy

and any database the host names (`PolicyContext.denied_writes`: a foreign bus the team file
names, the team's host database). A database comes with its siblings, `DATABASE_SIBLINGS`;
a JSON file with the lock and temp files of its atomic save (`config.json.lock`,
`.config.json.x1y2`). Names compare case-insensitively, as in paths.py.

A directory that holds any of these (the state root, `_teams`, a team or instance directory,
an ancestor such as `~`) may not be removed or moved either: `holds_stores`.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

from runtime.policy.context import PolicyContext

TEAMS_DIR = "_teams"
TEAM_DATABASES = ("bus.sqlite", "host.sqlite")
INSTANCE_DATABASES = ("turns.sqlite",)
INSTANCE_FILES = ("config.json", "permissions.json")
# SQLite's journal files (`-wal`, `-shm`, `-journal`) hold committed rows not yet in the main
# file; peerbus keeps receipts in a `.peerbus` sidecar (with journals of its own) and queues
# writers on a `.writers` flock file. Writing any of them is writing the database. Its
# `.signals` directory holds the per-recipient wake-up files (peerbus/sqlite/signals.py): touching
# them forges nothing, but wakes panels for nothing, so it is kept out of reach too.
_SQLITE_SUFFIXES = ("", "-wal", "-shm", "-journal")
DATABASE_SIBLINGS = tuple(
    f"{side}{suffix}"
    for side in ("", ".peerbus")
    for suffix in (*_SQLITE_SUFFIXES, ".writers", ".signals")
)

TEAM_WHY = "a team's bus or host database; a write could forge messages, events or controls"
INSTANCE_WHY = (
    "an instance's store (window, config or permissions); "
    "a write could rewrite a panel's memory or policy"
)
NAMED_WHY = "a database the team uses; a write could forge messages or events"


def is_database_family(name: str, database: str) -> bool:
    """True when `name` is `database` or one of its siblings (case-insensitive)."""
    return name.lower() in _family(database.lower())


@functools.lru_cache(maxsize=64)
def _family(database: str) -> frozenset[str]:
    return frozenset(database + sibling for sibling in DATABASE_SIBLINGS)


def _is_json_family(name: str, base: str) -> bool:
    return name.startswith(base) or name.startswith(f".{base}.")


@dataclass(frozen=True)
class _Layout:
    """A context's directories as tuples of parts: compared thousands of times a decision."""

    shared: frozenset[tuple[str, ...]]  # state roots that hold instances and teams
    own: frozenset[tuple[str, ...]]  # the current instance's directory
    homes: tuple[tuple[str, ...], ...]  # every directory a store lives in, and the roots
    named: tuple[tuple[tuple[str, ...], str], ...]  # denied_writes: (directory, name)


@functools.lru_cache(maxsize=16)
def _layout(ctx: PolicyContext) -> _Layout:
    own = frozenset(p.parent.parts for p in ctx.policy_files)
    # The current instance's own directory is a state root too, but holds no instances.
    shared = frozenset(r.parts for r in ctx.state_roots) - own
    homes = (
        *(r.parts for r in ctx.state_roots),
        *(p.parent.parts for p in (*ctx.policy_files, *ctx.denied_writes)),
    )
    named = tuple((p.parent.parts, p.name.lower()) for p in ctx.denied_writes)
    return _Layout(shared, own, homes, named)


def store_reason(path: Path, ctx: PolicyContext) -> str | None:
    """Why no tool may write `path` (one absolute name of it), or None."""
    parts = path.parts
    if len(parts) < 2:
        return None
    layout = _layout(ctx)
    name, directory = parts[-1].lower(), parts[:-1]
    if any(d == directory and name in _family(db) for d, db in layout.named):
        return NAMED_WHY
    if _is_team_dir(directory, layout) and any(name in _family(db) for db in TEAM_DATABASES):
        return TEAM_WHY
    if directory in layout.own or (directory[:-1] in layout.shared and directory[-1][:1] != "_"):
        if any(name in _family(db) for db in INSTANCE_DATABASES):
            return INSTANCE_WHY
        if any(_is_json_family(name, base) for base in INSTANCE_FILES):
            return INSTANCE_WHY
    return None


def holds_stores(path: Path, ctx: PolicyContext) -> bool:
    """True when removing or moving `path` would take a store with it."""
    parts = path.parts
    layout = _layout(ctx)
    if any(home[: len(parts)] == parts for home in layout.homes):
        return True  # a state root, a store's own directory, or an ancestor of one
    # Which entries of a state root are directories is not known without listing it, so
    # every entry counts: an instance directory, `_teams`, or a stray file.
    return parts[:-1] in layout.shared or _is_team_dir(parts, layout)


def _is_team_dir(directory: tuple[str, ...], layout: _Layout) -> bool:
    return (
        len(directory) >= 3
        and directory[-2].lower() == TEAMS_DIR
        and directory[:-2] in layout.shared
    )
