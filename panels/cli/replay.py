"""`mnemara replay`: the consolidation pass over recent notes; a dry run unless --apply."""

from __future__ import annotations

import json
from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING, Annotated, Any

import typer

from panels.cli.errors import EXIT_USAGE, fail, reports_errors
from panels.cli.instances import hold_instance
from panels.cli.options import InstanceOpt

if TYPE_CHECKING:
    from runtime.instance.config import InstanceConfig
    from runtime.instance.home import InstancePaths
    from runtime.memory.protocols import GraphStore
    from runtime.memory.replay import ReplayPlan
    from runtime.memory.replay_write import ReplayResult


@reports_errors
def replay(
    instance: InstanceOpt,
    days: Annotated[
        int | None,
        typer.Option(
            "--days",
            metavar="N",
            help="Notes of the last N days (default: the policy doc, else replay_default_days).",
        ),
    ] = None,
    threshold: Annotated[
        int | None,
        typer.Option(
            "--threshold",
            metavar="N",
            help="Notes a pattern needs (default: the policy doc, else replay_default_threshold).",
        ),
    ] = None,
    apply: Annotated[
        bool, typer.Option("--apply", help="Write the drafts, archives and digest.")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the plan as JSON.")] = False,
) -> None:
    """Find recurring patterns in recent notes: draft wiki proposals and role amendments,
    archive near-duplicates, write a digest in sleep/. Dry run unless --apply.

    Notes are near-duplicates only when they also state the same facts (figures, versions,
    dates, identifiers, names, negation, content words, and small words that carry a fact:
    before/after, over/under, must/may ...); a pair that reads alike but differs in one is
    kept and drafted in wiki_proposals/reconcile-*.md, the differences named.
    Nothing archived is lost: `mnemara memory restore -i NAME` lists archived notes, and
    `mnemara memory restore -i NAME SOURCE...` brings them back (replay then leaves them)."""
    from datetime import UTC, datetime

    from runtime.errors import EngineUnavailableError
    from runtime.instance.config import load_config
    from runtime.instance.home import InstancePaths
    from runtime.memory.embed import build_embedder
    from runtime.memory.notes import FileNotes
    from runtime.memory.progress import progress_bar
    from runtime.memory.replay import open_graph_read_only, plan_replay
    from runtime.memory.replay_policy import DAYS_RANGE, THRESHOLD_RANGE, load_policy, policy_path
    from runtime.memory.replay_write import apply_replay
    from runtime.memory.wiki import FileWiki

    paths = InstancePaths.for_name(instance).require()
    config = load_config(paths.config)
    policy = load_policy(*policy_path(paths.root, config.replay_policy_path))
    days = days if days is not None else policy.days or config.replay_default_days
    threshold = (
        threshold if threshold is not None else policy.threshold or config.replay_default_threshold
    )
    for name, value, (low, high) in (
        ("--days", days, DAYS_RANGE),
        ("--threshold", threshold, THRESHOLD_RANGE),
    ):
        if not low <= value <= high:
            raise fail(f"{name} {value} is out of range; give {low} to {high}", EXIT_USAGE)
    lease: AbstractContextManager[Any] = (
        hold_instance(paths, "replay", "replay into it") if apply else nullcontext()
    )
    with lease:
        embedder = build_embedder(config)
        graph: GraphStore | None = None
        skipped = "the graph is off (graph_enabled is false in config.json)"
        if config.graph_enabled:
            try:
                graph = open_graph_read_only(paths.graph, config.graph_engine)
                skipped = "no graph yet (nothing has been linked)"
            except EngineUnavailableError as exc:
                skipped = str(exc)
        notes = FileNotes(paths.memory)
        bar = progress_bar(0, "embedding notes")
        try:
            plan = plan_replay(
                notes,
                FileWiki(paths.wiki),
                embedder.embed,
                graph,
                days=days,
                threshold=threshold,
                now=datetime.now(UTC),
                progress=bar,
                graph_skipped=skipped,
            )
        finally:
            bar.close()
            if graph is not None:
                graph.close()
        result = apply_replay(plan, notes, paths) if apply else None
        settled = settle(paths, config, result.archived) if result is not None else []
    remarks = list(policy.problems)
    if as_json:
        typer.echo(json.dumps({**plan_json(plan, result, remarks), "settled": settled}, indent=2))
        return
    for line in [*describe(plan, result, remarks), *(f"  {line}" for line in settled)]:
        typer.echo(line)


def settle(paths: InstancePaths, config: InstanceConfig, archived: tuple[str, ...]) -> list[str]:
    """The index and the graph follow the archive in the same step (runtime/memory/archiving)."""
    if not archived:
        return []
    from runtime.memory import open_memory
    from runtime.memory.archiving import settle_archived

    with open_memory(paths, config) as memory:
        return settle_archived(memory, archived, "replay: near-duplicate").lines()


def plan_json(plan: ReplayPlan, result: ReplayResult | None, remarks: list[str]) -> dict[str, Any]:
    from runtime.memory.figures import rounded

    return {
        "mode": "apply" if result else "dry-run",
        "at": plan.at.isoformat(timespec="seconds"),
        "days": plan.days,
        "threshold": plan.threshold,
        "atoms": plan.atoms,
        "pages": plan.pages,
        "patterns": [
            {
                "members": [atom.source for atom in pattern.members],
                "representative": pattern.representative.source,
                "spread": pattern.spread,
                "covered_by": pattern.covered_by,
                "entities": [list(entity) for entity in pattern.entities],
                "proposal": pattern.proposal,
                "amendment": pattern.amendment,
            }
            for pattern in plan.patterns
        ],
        "duplicates": [
            {"keep": d.keep, "archive": d.drop, "distance": rounded(d.distance, 4)}
            for d in plan.duplicates
        ],
        "reconcile": [
            {
                "notes": [c.first.source, c.second.source],
                "distance": rounded(c.distance, 4),
                "differences": list(c.differences),
                "proposal": c.proposal,
            }
            for c in plan.conflicts
        ],
        "read": plan.read,
        "digest": plan.digest,
        "written": [str(path) for path in result.written] if result else [],
        "remarks": [*remarks, *plan.remarks],
    }


def counted(n: int, thing: str) -> str:
    return f"{n} {thing}{'' if n == 1 else 's'}"


def describe(plan: ReplayPlan, result: ReplayResult | None, remarks: list[str]) -> list[str]:
    """The plan as a person reads it, then what was written (or that nothing was)."""
    from runtime.memory.figures import fixed

    lines = [
        f"replay read {counted(plan.read, 'note')} "
        f"from the last {plan.days} days "
        f"(threshold {plan.threshold}, {plan.pages} wiki pages compared): "
        f"{plan.read - len(plan.duplicates)} kept, {len(plan.duplicates)} to archive, "
        f"{counted(len(plan.patterns), 'pattern')} "
        f"({len(plan.proposals)} to propose), "
        f"{counted(len(plan.conflicts), 'pair')} to reconcile"
    ]
    for i, pattern in enumerate(plan.patterns, 1):
        text = " ".join(pattern.representative.text.split())[:100]
        lines.append(f"  {i}. {len(pattern.members)} notes: {text}")
        if pattern.covered_by:
            lines.append(f"     already covered by {pattern.covered_by}")
        else:
            lines.append(f"     wiki proposal: {pattern.proposal}")
        if pattern.amendment:
            lines.append(f"     role amendment: {pattern.amendment}")
        if pattern.entities:
            refs = ", ".join(f"{ref} ({count})" for ref, count in pattern.entities)
            lines.append(f"     entities: {refs}")
    for duplicate in plan.duplicates:
        lines.append(
            f"  archive {duplicate.drop} (near-duplicate of {duplicate.keep}, "
            f"distance {fixed(duplicate.distance)})"
        )
    for conflict in plan.conflicts:
        lines.append(
            f"  reconcile {conflict.first.source} / {conflict.second.source} (alike, distance "
            f"{fixed(conflict.distance)}, but they differ in {'; '.join(conflict.differences)}): "
            f"{conflict.proposal}"
        )
    lines += [f"  note: {remark}" for remark in [*remarks, *plan.remarks]]
    if result is None:
        lines.append(f"dry run: nothing written; add --apply to write them and {plan.digest}")
    else:
        lines.append(
            f"wrote {counted(len(result.written), 'file')} ({len(result.unchanged)} already up to "
            f"date), archived {counted(len(result.archived), 'note')} (`mnemara memory restore` "
            f"brings them back); digest {result.digest}"
        )
    return lines
