"""`mnemara memory archive` and `mnemara memory restore`: set notes aside and bring them back.

Replay archives near-duplicates itself (`mnemara replay --apply`); these commands do the same
by hand, for a note that is out of date, and undo either. Nothing is deleted: an archived
note's block is copied to `memory/archive/<day>.md`, the ledger `memory/archive/archived.jsonl`
says it is archived, and search and replay leave it out until it is restored. The search
index and the graph follow in the same step (runtime/memory/archiving.py). Both commands hold
the instance's lease, so they refuse an instance a running host is using.
"""

from __future__ import annotations

from typing import Annotated

import typer

from panels.cli.errors import EXIT_USAGE, fail, reports_errors
from panels.cli.options import InstanceOpt

SourcesArg = Annotated[
    list[str] | None,
    typer.Argument(
        metavar="SOURCE",
        help="Notes by source, as search and replay print them: memory/2026-12-01.md#3f2a9c0b1d7e",
        show_default=False,
    ),
]


def checked(sources: list[str] | None) -> list[str]:
    """The sources named, each once; an empty one is refused by name, not looked up."""
    wanted = list(dict.fromkeys(sources or []))
    if any(not source.strip() for source in wanted):
        raise fail("a SOURCE is empty; search prints notes' sources", EXIT_USAGE)
    return wanted


@reports_errors
def archive(
    sources: SourcesArg,
    instance: InstanceOpt,
    reason: Annotated[
        str, typer.Option("--reason", metavar="TEXT", help="Why, kept in the ledger.")
    ] = "archived by hand",
) -> None:
    """Set notes aside: search and replay leave them out until `mnemara memory restore`."""
    from panels.cli.memory_common import opened
    from runtime.memory.archiving import archive_notes

    wanted = checked(sources)
    if not wanted:
        raise fail("name the notes to archive (SOURCE); search prints them", EXIT_USAGE)
    with opened(instance, ("memory archive", "archive notes in it")) as (_, memory):
        archived = set(memory.notes.archived())
        present = {atom.source for atom in memory.notes.atoms()}
        unknown = [s for s in wanted if s not in present and s not in archived]
        if unknown:
            raise fail(
                f"no note {unknown[0]} in {instance}; search prints notes' sources", EXIT_USAGE
            )
        settled = archive_notes(memory, wanted, reason)
    for source in wanted:
        state = "archived" if source in settled.sources else "already archived"
        typer.echo(f"{state}: {source}")
    for line in settled.lines():
        typer.echo(line)
    typer.echo(f"undo with: mnemara memory restore -i {instance} {' '.join(wanted)}")


@reports_errors
def restore(instance: InstanceOpt, sources: SourcesArg = None) -> None:
    """Bring archived notes back (replay's near-duplicates, or notes archived by hand); with
    no SOURCE, list what is archived. Replay does not archive a restored note again."""
    from runtime.instance.home import InstancePaths
    from runtime.memory.notes import FileNotes

    paths = InstancePaths.for_name(instance).require()
    wanted = checked(sources)
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
    from panels.cli.memory_common import opened
    from runtime.memory.archiving import restore_notes
    from runtime.memory.progress import progress_bar

    with opened(instance, ("memory restore", "restore notes in it")) as (_, memory):
        now_archived = set(memory.notes.archived())
        unknown = [s for s in wanted if s not in now_archived]
        if unknown:
            raise fail(
                f"{unknown[0]} is not archived in {instance}; `mnemara memory restore -i "
                f"{instance}` lists what is",
                EXIT_USAGE,
            )
        bar = progress_bar(0, "indexing")
        try:
            settled = restore_notes(memory, wanted, bar)
        finally:
            bar.close()
    for source in settled.sources:
        typer.echo(f"restored: {source}")
    for line in settled.lines():
        typer.echo(line)
