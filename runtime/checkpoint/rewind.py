"""A rewind: a panel's writable areas brought back to a checkpoint, and the report of it.

First the areas are checkpointed as they are now (a checkpoint of kind "rewind"), so a
rewind can itself be undone by rewinding to that one. Then each area recorded in the target
is compared with that fresh checkpoint (plan.py) and the differences are written back
(restore.py): changed files restored, files made since removed, files deleted since made
again, executable bits and symbolic links included. Files that neither checkpoint holds
(ignored, excluded) are not touched.

The caller holds the panel (and every panel sharing its areas) between turns, and says in
the panel's window what changed (`RewindReport.window_note`).
"""

from __future__ import annotations

import time
from collections.abc import Collection
from dataclasses import dataclass, replace
from pathlib import Path

from runtime.checkpoint.model import BlobReader, Checkpoint, CheckpointSettings
from runtime.checkpoint.plan import AreaPlan, plan_restore
from runtime.checkpoint.restore import Applied, apply_plan
from runtime.checkpoint.store import CheckpointStore, find
from runtime.errors import CheckpointError

SHOWN = 20  # paths named per kind of change in a report


@dataclass(frozen=True)
class RewindReport:
    target: Checkpoint
    before: Checkpoint  # the areas as they were just before the rewind
    areas: tuple[Applied, ...]

    def count(self, what: str) -> int:
        return sum(len(getattr(a, what)) for a in self.areas)

    @property
    def ok(self) -> bool:
        return not self.count("failed")

    def summary(self) -> str:
        """One line: where to, how many of each change, and how to undo it."""
        changed = [
            f"{self.count(w)} {w}"
            for w in ("restored", "removed", "recreated", "failed")
            if self.count(w)
        ] or ["nothing to change"]
        return (
            f"files back to checkpoint {self.target.number} ({describe(self.target)}): "
            f"{', '.join(changed)}; checkpoint {self.before.number} holds them as they were "
            "before this rewind"
        )

    def details(self, limit: int = SHOWN) -> list[str]:
        """The paths changed, by kind (at most `limit` of each per area), and the failures."""
        lines: list[str] = []
        many = len(self.areas) > 1
        for area in self.areas:
            where = f"{area.area}: " if many else ""
            for what in ("restored", "removed", "recreated", "left"):
                paths: list[str] = getattr(area, what)
                if paths:
                    shown = ", ".join(paths[:limit])
                    more = f" and {len(paths) - limit} more" if len(paths) > limit else ""
                    label = "left as is (too big or ignored then)" if what == "left" else what
                    lines.append(f"{where}{label}: {shown}{more}")
            for path, why in area.failed[:limit]:
                lines.append(f"{where}NOT restored: {path}: {why}")
        return lines

    def window_note(self) -> str:
        """The row the panel's window keeps, so the agent knows at its next turn."""
        head = (
            f"[files rewound] The operator brought the files of your working areas back to "
            f"checkpoint {self.target.number}, {describe(self.target)}."
        )
        body = " ".join(f"{line}." for line in self.details(limit=10)) or "Nothing differed."
        tail = (
            "Whatever changed in these files since then is undone: read a file again before "
            f"relying on what you remember of it. (Checkpoint {self.before.number} holds the "
            "files as they were before this rewind.)"
        )
        return f"{head} {body} {tail}"


def describe(checkpoint: Checkpoint) -> str:
    """E.g. "taken before turn 3, 2026-12-06 14:02 UTC"."""
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(checkpoint.at))
    if checkpoint.kind == "rewind":
        return f"taken {checkpoint.note or 'before a rewind'}, {when}"
    turn = f" turn {checkpoint.turn}" if checkpoint.turn is not None else " a turn"
    return f"taken before{turn}, {when}"


def rewind(
    store: CheckpointStore,
    number: int | None,
    *,
    settings: CheckpointSettings,
    exclude: Collection[Path] = (),
) -> RewindReport:
    """Bring the areas of checkpoint `number` (None: the latest turn's) back to it."""
    target = find(store, number)
    recorded = target.recorded()
    if not recorded:
        raise CheckpointError(
            f"checkpoint {target.number} holds no files (every area was skipped)", path=store.root
        )
    before = store.take(
        [Path(a.path) for a in recorded],
        kind="rewind",
        settings=settings,
        exclude={*exclude, *(Path(p) for p in target.exclude)},
        note=f"before rewinding to checkpoint {target.number}",
    )
    now_areas = {a.path: a for a in before.areas}
    for area in recorded:
        current = now_areas.get(area.path)
        if current is None or current.skipped:
            why = current.skipped if current is not None else "not recorded"
            raise CheckpointError(
                f"{area.path} cannot be rewound: its files as they are now could not be "
                f"checkpointed first ({why}); nothing was changed",
                path=Path(area.path),
            )
    then, now = store.files(target), store.files(before)
    applied: list[Applied] = []
    with store.reader() as read:
        for area in recorded:
            plan = plan_restore(
                area.path,
                then[area.path],
                now[area.path],
                target_capped=area.capped,
                current_capped=now_areas[area.path].capped,
            )
            applied.append(_apply(store, plan, read))
    return RewindReport(target, before, tuple(applied))


def _apply(store: CheckpointStore, plan: AreaPlan, read: BlobReader) -> Applied:
    """Apply `plan`; when it changes .gitignore files and removes files, the .gitignore files
    go first, and a file their rules ignore is left alone: the checkpoint did not hold it
    because it was ignored then (a `node_modules` a turn stopped ignoring), not because it
    was made since."""
    rules = [(p, e) for p, e in plan.writes if _is_rules(p)]
    gone_rules = [p for p in plan.remove if _is_rules(p)]
    if not plan.remove or not (rules or gone_rules):
        return apply_plan(plan, read)
    first = apply_plan(replace(plan, restore=tuple(w for w in plan.restore if _is_rules(w[0])),
                               recreate=tuple(w for w in plan.recreate if _is_rules(w[0])),
                               remove=tuple(gone_rules), left=()), read)  # fmt: skip
    candidates = [p for p in plan.remove if not _is_rules(p)]
    ignored = store.ignored(Path(plan.area), candidates)
    rest = replace(
        plan,
        restore=tuple(w for w in plan.restore if not _is_rules(w[0])),
        recreate=tuple(w for w in plan.recreate if not _is_rules(w[0])),
        remove=tuple(p for p in candidates if p not in ignored),
        left=plan.left + tuple(sorted(ignored)),
    )
    second = apply_plan(rest, read)
    for what in ("restored", "recreated", "removed", "failed"):
        getattr(second, what)[:0] = getattr(first, what)
    return second


def _is_rules(path: str) -> bool:
    return path.rsplit("/", 1)[-1] == ".gitignore"
