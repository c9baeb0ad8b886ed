"""sleep/last_replay.json: what the last applied replay did, and its reader.

A leaf outside runtime/memory/ so that viewers (`mnemara show`, the dashboard's header) read
the record without loading memory's engines; replay's writer (runtime/memory/replay_write.py)
writes the same shape. The reader never raises: a missing or unusable file is no replay.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runtime.instance.home import InstancePaths
from sqlitekit.jsonload import load_json

RECORD = Path("sleep") / "last_replay.json"  # under the instance (or shared memory) directory


@dataclass(frozen=True)
class LastReplay:
    """sleep/last_replay.json: what the last applied replay did (for `show` and the dashboard)."""

    at: str
    mode: str
    days: int
    threshold: int
    atoms: int
    patterns: int
    proposals: int
    archived: int
    amendments: int
    digest: str
    reconcile: int = 0  # pairs of near-duplicates whose facts differ (none before #31)

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def summary(self) -> str:
        return (
            f"last replay {self.at}: {self.patterns} patterns in {self.atoms} notes "
            f"({self.days} days), {self.proposals} wiki proposals, {self.amendments} role "
            f"amendments, {self.archived} archived, {self.reconcile} pairs to reconcile; "
            f"{self.digest}"
        )


def last_replay(paths: InstancePaths | Path) -> LastReplay | None:
    """The last applied replay, or None when there is none or its file is unusable."""
    root = paths.root if isinstance(paths, InstancePaths) else paths
    try:
        data = load_json((root / RECORD).read_text(encoding="utf-8"))
        return LastReplay(
            at=_text(data["at"]),
            mode=_text(data["mode"]),
            days=_count(data["days"]),
            threshold=_count(data["threshold"]),
            atoms=_count(data["atoms"]),
            patterns=_count(data["patterns"]),
            proposals=_count(data["proposals"]),
            archived=_count(data["archived"]),
            amendments=_count(data["amendments"]),
            digest=_text(data["digest"]),
            reconcile=_count(data.get("reconcile", 0)),
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _text(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError(f"not a string: {value!r}")
    return value


def _count(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"not a count: {value!r}")
    return value
