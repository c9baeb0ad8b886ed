"""Writing a replay plan: proposals, role-amendment drafts, archives, the digest, last_replay.json
(its shape and reader: runtime/instance/replay_record.py).

Re-running on unchanged memory changes nothing but last_replay.json's `at`: drafts are named
by their pattern's slug and a hash of its member notes and never rewritten once they exist
(the operator may be editing one); the day's digest is rewritten only when its text differs,
and holds no clock time; archived notes are already gone from the next run's notes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runtime.instance.config import write_json_atomic, write_text_atomic
from runtime.instance.home import InstancePaths
from runtime.instance.replay_record import RECORD, LastReplay
from runtime.memory.duplicates import Conflict
from runtime.memory.figures import fixed
from runtime.memory.files import read_memory_text
from runtime.memory.protocols import NoteStore
from runtime.memory.replay import Pattern, ReplayPlan

SNIPPET = 200


@dataclass(frozen=True)
class ReplayResult:
    written: tuple[Path, ...]  # files created or changed
    unchanged: tuple[Path, ...]  # drafts and digest already as planned
    archived: tuple[str, ...]  # sources archived by this run
    digest: Path
    last: Path


def apply_replay(plan: ReplayPlan, notes: NoteStore, paths: InstancePaths | Path) -> ReplayResult:
    """Write what `plan` says under the instance (or a team's shared memory) directory."""
    root = paths.root if isinstance(paths, InstancePaths) else paths
    written: list[Path] = []
    unchanged: list[Path] = []
    drafts: list[tuple[str | None, str]] = []
    for pattern in plan.patterns:
        drafts.append((pattern.proposal, render_proposal(plan, pattern)))
        drafts.append((pattern.amendment, render_amendment(plan, pattern)))
    drafts += [(conflict.proposal, render_reconcile(plan, conflict)) for conflict in plan.conflicts]
    for relative, text in drafts:
        if relative is None:
            continue
        target = root / relative
        if target.exists():  # a draft is written once; the operator may be editing it
            unchanged.append(target)
            continue
        write_text_atomic(target, text)
        written.append(target)
    archived: list[str] = []
    for duplicate in plan.duplicates:
        distance = fixed(duplicate.distance)
        reason = f"replay: near-duplicate of {duplicate.keep} (distance {distance})"
        archived += notes.archive([duplicate.drop], reason)
    digest = root / plan.digest
    text = render_digest(plan)
    if digest.is_file() and read_memory_text(digest) == text:
        unchanged.append(digest)
    else:
        write_text_atomic(digest, text)
        written.append(digest)
    last = root / RECORD
    write_json_atomic(last, _last_record(plan))
    return ReplayResult(tuple(written), tuple(unchanged), tuple(archived), digest, last)


def _last_record(plan: ReplayPlan) -> dict[str, Any]:
    return LastReplay(
        at=plan.at.isoformat(timespec="seconds"),
        mode="apply",
        days=plan.days,
        threshold=plan.threshold,
        atoms=plan.atoms,
        patterns=len(plan.patterns),
        proposals=len(plan.proposals),
        archived=len(plan.archived),
        amendments=len(plan.amendments),
        digest=plan.digest,
        reconcile=len(plan.conflicts),
    ).as_dict()


# -- rendering (pure) ------------------------------------------------------------------------


def _snippet(text: str) -> str:
    return " ".join(text.split())[:SNIPPET]


def _member_lines(pattern: Pattern, only_self: bool = False) -> list[str]:
    return [
        f"- [{atom.written_at}] ({atom.category}) {_snippet(atom.text)} `{atom.source}`"
        for atom in pattern.members
        if not only_self or atom.category == "self_observation"
    ]


def render_proposal(plan: ReplayPlan, pattern: Pattern) -> str:
    entities = ", ".join(f"{ref} ({count})" for ref, count in pattern.entities)
    lines = [
        "---",
        "status: proposed",
        "source: replay",
        f"date: {plan.at.date().isoformat()}",
        f"suggested_page: {pattern.slug}",
        f"members: {len(pattern.members)}",
        f"spread: {fixed(pattern.spread)}",
        "---",
        "",
        f"# Proposed page: {pattern.slug}",
        "",
        f"{len(pattern.members)} notes from the {plan.days} days before "
        f"{plan.at.date().isoformat()} say much the same thing. If it holds, write it up with "
        f"`wiki_write` as `{pattern.slug}` (or a better name) and delete this file.",
        "",
        "## Notes",
        "",
        *_member_lines(pattern),
    ]
    if entities:
        lines += ["", "## Entities in the graph", "", entities]
    if pattern.causal:
        lines += ["", "## Why, in the notes' words", "", *(f"- {s}" for s in pattern.causal)]
    return "\n".join(lines) + "\n"


def render_reconcile(plan: ReplayPlan, conflict: Conflict) -> str:
    """Two notes that read alike but differ in a fact: both kept, the differences named."""
    lines = [
        "---",
        "status: proposed",
        "source: replay",
        f"date: {plan.at.date().isoformat()}",
        f"distance: {fixed(conflict.distance)}",
        "---",
        "",
        "# Two notes to reconcile",
        "",
        "These notes read almost the same, but their facts differ, so replay kept both. If one "
        "is out of date, archive it (`mnemara memory archive SOURCE`); if both hold, say how "
        "they differ in the wiki. Then delete this file.",
        "",
        "## Where they differ",
        "",
        *(f"- **{line}**" for line in conflict.differences),
        "",
        "## The notes",
        "",
        *(
            f"- [{atom.written_at}] ({atom.category}) {_snippet(atom.text)} `{atom.source}`"
            for atom in (conflict.first, conflict.second)
        ),
    ]
    return "\n".join(lines) + "\n"


def render_amendment(plan: ReplayPlan, pattern: Pattern) -> str:
    """A role-amendment draft in `propose_role_amendment`'s front matter, plus `source`."""
    rationale = (
        f"{pattern.self_observations} self-observations in {plan.days} days describe one "
        "behaviour; the role doc may need to say how to handle it"
    )
    lines = [
        "---",
        f"date: {plan.at.date().isoformat()}",
        "severity: minor",
        f"rationale: {json.dumps(rationale, ensure_ascii=False)}",
        "source: replay",
        "---",
        "",
        f"Consider a role-doc rule about: {_snippet(pattern.representative.text)}",
        "",
        "## Self-observations",
        "",
        *_member_lines(pattern, only_self=True),
    ]
    return "\n".join(lines) + "\n"


def render_digest(plan: ReplayPlan) -> str:
    """The day's digest: counts, patterns, and where each draft is (no clock time in it)."""
    day = plan.at.date().isoformat()
    lines = [
        f"# Replay digest {day}",
        "",
        f"- days: {plan.days} (notes since {plan.since.date().isoformat()})",
        f"- threshold: {plan.threshold}",
        f"- notes clustered: {plan.atoms}",
        f"- wiki pages compared: {plan.pages}",
        f"- patterns: {len(plan.patterns)}",
        f"- wiki proposals: {len(plan.proposals)}",
        f"- role amendments: {len(plan.amendments)}",
        f"- near-duplicates archived: {len(plan.archived)}",
        f"- pairs to reconcile (alike, but their facts differ): {len(plan.conflicts)}",
        "",
        "## Patterns",
        "",
    ]
    for i, pattern in enumerate(plan.patterns, 1):
        where = (
            f"covered by {pattern.covered_by}"
            if pattern.covered_by
            else f"proposal {pattern.proposal}"
        )
        if pattern.amendment:
            where += f"; amendment {pattern.amendment}"
        entities = ", ".join(ref for ref, _ in pattern.entities) or "-"
        lines.append(
            f"{i}. {len(pattern.members)} notes, spread {fixed(pattern.spread)}, "
            f"entities {entities}; "
            f"{where}: {_snippet(pattern.representative.text)}"
        )
    if not plan.patterns:
        lines.append("(none)")
    lines += ["", "## Near-duplicates archived (restorable; see memory/archive/)", ""]
    lines += [f"- {source}" for source in plan.archived] or ["(none)"]
    lines += ["", "## Pairs to reconcile (both kept)", ""]
    lines += [
        f"- {c.first.source} / {c.second.source}: {'; '.join(c.differences)} ({c.proposal})"
        for c in plan.conflicts
    ] or ["(none)"]
    if plan.remarks:
        lines += ["", "## Remarks", "", *(f"- {remark}" for remark in plan.remarks)]
    return "\n".join(lines) + "\n"
