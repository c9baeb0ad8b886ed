"""`mnemara export | import | migrate`: move a window in and out, and upgrade old instances."""

from __future__ import annotations

import sys
from contextlib import nullcontext
from pathlib import Path
from typing import IO, Annotated

import typer

from panels.cli.errors import EXIT_USAGE, exit_code_for, fail, reports_errors
from panels.cli.instances import hold_instance
from panels.cli.options import InstanceOpt, check_output


@reports_errors
def export(
    instance: InstanceOpt,
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", metavar="FILE", help="File to write (default: stdout)."),
    ] = None,
    markdown: Annotated[
        bool, typer.Option("--markdown", help="Readable Markdown instead of the JSONL format.")
    ] = False,
) -> None:
    """Export the window (rows, blocks, pins, labels, slots, markers) as versioned JSONL."""
    from runtime.instance.config import load_config
    from runtime.instance.home import InstancePaths
    from runtime.instance.roledoc import RoleDocSource
    from runtime.store import TurnStore
    from runtime.store.export import export_jsonl, export_markdown

    if output is not None:
        check_output(output)
    paths = InstancePaths.for_name(instance).require()
    config = load_config(paths.config)
    with TurnStore.open_read_only(paths.turns) as store:
        # Opened once the store is: a store that cannot be read leaves no empty file behind.
        target: IO[str]
        with output.open("w", encoding="utf-8") if output else nullcontext(sys.stdout) as target:
            if markdown:
                role_path = Path(config.role_doc_path) if config.role_doc_path else None
                role_text = RoleDocSource(role_path).read().text
                export_markdown(store, target, instance=instance, role_doc_text=role_text)
            else:
                count = export_jsonl(store, target, instance=instance)
                if output:
                    typer.echo(f"exported {count} rows to {output}", err=True)


@reports_errors
def import_(
    instance: InstanceOpt,
    source: Annotated[
        Path, typer.Argument(metavar="FILE", help="A file written by `mnemara export`.")
    ],
    replace: Annotated[
        bool, typer.Option("--replace", help="Replace a window that already has rows.")
    ] = False,
) -> None:
    """Restore a window from a JSONL export (refuses a non-empty window unless --replace)."""
    from runtime.instance.home import InstancePaths
    from runtime.store import TurnStore
    from runtime.store.export import import_jsonl

    paths = InstancePaths.for_name(instance).require()
    if source.is_dir():
        raise fail(f"{source} is a directory; give the file `mnemara export -o` wrote", 2)
    if not source.is_file():
        raise fail(f"{source}: no such file; give the file `mnemara export -o` wrote", 2)
    with hold_instance(paths, "import", "import into it"), TurnStore.open(paths.turns) as store:
        summary = import_jsonl(store, source, replace=replace)
    typer.echo(f"imported {summary}")


@reports_errors
def migrate(
    instance: Annotated[
        str | None,
        typer.Option("--instance", "-i", metavar="NAME", help="The one instance to migrate."),
    ] = None,
    all_: Annotated[bool, typer.Option("--all", help="Every instance under MNEMARA_HOME.")] = False,
) -> None:
    """Bring instance stores to the current schema (idempotent; converts original mnemara).

    An original instance's config.json is rewritten in our field forms (the old file kept as
    config.json.bak-<stamp>) and its memory brought over. With --all, an instance in use
    (leased by a host) is reported and skipped, and the command exits non-zero at the end.
    """
    from runtime.instance.home import InstancePaths, list_instances
    from runtime.instance.lease import InstanceLeasedError
    from runtime.memory.migrate import migrate_memory
    from runtime.memory.progress import progress_bar
    from runtime.store.legacy import migrate_instance

    if bool(instance) == all_:
        raise fail("give --instance NAME or --all", EXIT_USAGE)
    names = list_instances() if all_ else [str(instance)]
    skipped: list[InstanceLeasedError] = []
    for name in names:
        paths = InstancePaths.for_name(name).require()
        try:
            with hold_instance(paths, "migrate", "migrate it"):
                report = migrate_instance(paths)
                bar = progress_bar(0, "indexing")
                try:
                    memory = migrate_memory(paths, bar)
                finally:
                    bar.close()
        except InstanceLeasedError as exc:
            if not all_:
                raise
            typer.echo(f"mnemara: skipped: {exc}", err=True)
            skipped.append(exc)
            continue
        for line in str(report).splitlines():
            typer.echo(f"{name}: {line}")
        for line in str(memory).splitlines():
            typer.echo(f"{name}: {line}")
    if skipped:
        names_in_use = ", ".join(exc.instance for exc in skipped)
        raise fail(
            f"skipped {len(skipped)} instance(s) in use ({names_in_use}); "
            "migrate them once they are stopped",
            exit_code_for(skipped[0]),
        )
