"""`mnemara memory archive` and `mnemara memory restore`: set notes aside and bring them back.

Replay archives near-duplicates itself (`mnemara replay --apply`); these commands do the same
by hand, for a note that is out of date, and undo either. Nothing is deleted: an archived
note's block is copied to `memory/archive/<day>.md`, the ledger `memory/archive/archived.jsonl`
says it is archived, and search and replay leave it out until it is restored. Both commands
hold the instance's lease, so they refuse an instance a running host is using.
"""

from __future__ import annotations

from typing import Annotated

import typer

from panels.cli.errors import EXIT_USAGE, fail, reports_errors
from panels.cli.instances import hold_instance
from panels.cli.options import InstanceOpt

SourcesArg = Annotated[
    list[str] | None,
    typer.Argument(
        metavar="SOURCE",
        help="Notes by source, as search and replay print them: memory/2026-12-01.md#3f2a9c0b1d7e",
        show_default=False,
    ),
]


@reports_errors
def archive(
    sources: SourcesArg,
    instance: InstanceOpt,
    reason: Annotated[
        str, typer.Option("--reason", metavar="TEXT", help="Why, kept in the ledger.")
    ] = "archived by hand",
) -> None:
    """Set notes aside: search and replay leave them out until `mnemara memory restore`."""
    from runtime.home import InstancePaths
    from runtime.memory.notes import FileNotes

    wanted = list(dict.fromkeys(sources or []))
    if not wanted:
        raise fail("name the notes to archive (SOURCE); search prints them", EXIT_USAGE)
    paths = InstancePaths.for_name(instance).require()
    with hold_instance(paths, "memory archive", "archive notes in it"):
        notes = FileNotes(paths.memory)
        archived = set(notes.archived())
        present = {atom.source for atom in notes.atoms()}
        unknown = [s for s in wanted if s not in present and s not in archived]
        if unknown:
            raise fail(
                f"no note {unknown[0]} in {instance}; search prints notes' sources", EXIT_USAGE
            )
        done = notes.archive(wanted, reason)
    for source in wanted:
        state = "archived" if source in done else "already archived"
        typer.echo(f"{state}: {source}")
    typer.echo(f"undo with: mnemara memory restore -i {instance} {' '.join(wanted)}")


@reports_errors
def restore(instance: InstanceOpt, sources: SourcesArg = None) -> None:
    """Bring archived notes back (replay's near-duplicates, or notes archived by hand); with
    no SOURCE, list what is archived."""
    from runtime.home import InstancePaths
    from runtime.memory.notes import FileNotes

    paths = InstancePaths.for_name(instance).require()
    wanted = list(dict.fromkeys(sources or []))
    if not wanted:
        archived = FileNotes(paths.memory).archived()
        for source in archived:
            typer.echo(source)
        typer.echo(
            f"{len(archived)} archived note{'' if len(archived) == 1 else 's'}"
            + (
                f"; restore with: mnemara memory restore -i {instance} SOURCE..."
                if archived
                else ""
            )
        )
        return
    from panels.cli.memory import opened
    from runtime.memory.memory import sync_index
    from runtime.memory.progress import progress_bar

    with opened(instance, ("memory restore", "restore notes in it")) as (_, memory):
        notes = FileNotes(paths.memory)
        now_archived = set(notes.archived())
        unknown = [s for s in wanted if s not in now_archived]
        if unknown:
            raise fail(
                f"{unknown[0]} is not archived in {instance}; `mnemara memory restore -i "
                f"{instance}` lists what is",
                EXIT_USAGE,
            )
        notes.restore(wanted)
        for source in wanted:
            typer.echo(f"restored: {source}")
        if memory.config.rag_enabled:  # an index sync since the archive dropped their rows
            bar = progress_bar(0, "indexing")
            try:
                typer.echo(f"search index: {sync_index(memory, bar)}")
            finally:
                bar.close()
