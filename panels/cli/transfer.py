"""`mnemara export | import | migrate`: move a window in and out, and upgrade old instances."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from panels.cli.errors import fail, reports_errors
from panels.cli.instances import InstanceOpt


@reports_errors
def export(
    instance: InstanceOpt,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="File to write (default: stdout).")
    ] = None,
    markdown: Annotated[
        bool, typer.Option("--markdown", help="Readable Markdown instead of the JSONL format.")
    ] = False,
) -> None:
    """Export the window (rows, blocks, pins, labels, slots, markers) as versioned JSONL."""
    from runtime.config import load_config
    from runtime.home import InstancePaths
    from runtime.roledoc import RoleDocSource
    from runtime.store import TurnStore
    from runtime.store.export import export_jsonl, export_markdown

    paths = InstancePaths.for_name(instance).require()
    config = load_config(paths.config)
    out = output.open("w", encoding="utf-8") if output else sys.stdout
    try:
        with TurnStore.open(paths.turns) as store:
            if markdown:
                role_path = Path(config.role_doc_path) if config.role_doc_path else None
                role_text = RoleDocSource(role_path).read().text
                export_markdown(store, out, instance=instance, role_doc_text=role_text)
            else:
                count = export_jsonl(store, out, instance=instance)
                if output:
                    typer.echo(f"exported {count} rows to {output}", err=True)
    finally:
        if output:
            out.close()


@reports_errors
def import_(
    instance: InstanceOpt,
    source: Annotated[Path, typer.Argument(help="A file written by `mnemara export`.")],
    replace: Annotated[
        bool, typer.Option("--replace", help="Replace a window that already has rows.")
    ] = False,
) -> None:
    """Restore a window from a JSONL export (refuses a non-empty window unless --replace)."""
    from runtime.home import InstancePaths
    from runtime.store import TurnStore
    from runtime.store.export import import_jsonl

    paths = InstancePaths.for_name(instance).require()
    if not source.is_file():
        raise fail(f"{source}: no such file", 2)
    with TurnStore.open(paths.turns) as store:
        summary = import_jsonl(store, source, replace=replace)
    typer.echo(f"imported {summary}")


@reports_errors
def migrate(
    instance: Annotated[str | None, typer.Option("--instance", "-i", help="One instance.")] = None,
    all_: Annotated[bool, typer.Option("--all", help="Every instance under MNEMARA_HOME.")] = False,
) -> None:
    """Bring instance stores to the current schema (idempotent; converts original mnemara)."""
    from runtime.home import InstancePaths, list_instances
    from runtime.store.legacy import migrate_instance

    if bool(instance) == all_:
        raise fail("give --instance NAME or --all", 2)
    names = list_instances() if all_ else [str(instance)]
    for name in names:
        report = migrate_instance(InstancePaths.for_name(name).require())
        typer.echo(f"{name}: {report}")
