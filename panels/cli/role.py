"""`mnemara role`: point an instance at a role doc, or download one once into it."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from panels.cli.errors import fail, reports_errors
from panels.cli.instances import InstanceOpt


@reports_errors
def role(
    instance: InstanceOpt,
    set_: Annotated[
        Path | None, typer.Option("--set", help="Use this local Markdown file as the role doc.")
    ] = None,
    set_from_url: Annotated[
        str | None,
        typer.Option(help="Download an https role doc once into <instance>/role.md."),
    ] = None,
) -> None:
    """Show or set the role doc (re-read from disk on every turn)."""
    from runtime.config import load_config, save_config
    from runtime.home import InstancePaths
    from runtime.roledoc import read_role_doc

    paths = InstancePaths.for_name(instance).require()
    config = load_config(paths.config)
    if set_ and set_from_url:
        raise fail("give either --set or --set-from-url, not both", 2)
    if set_ is not None:
        target = set_.expanduser().resolve()
        read_role_doc(target)
    elif set_from_url is not None:
        from runtime.config import write_text_atomic
        from runtime.fetch import fetch_role_doc

        text = fetch_role_doc(set_from_url)
        write_text_atomic(paths.role, text)
        target = paths.role
        typer.echo(f"saved {len(text)} chars to {target} (never re-fetched; edit it freely)")
    else:
        typer.echo(config.role_doc_path or "(no role doc set)")
        return
    save_config(paths.config, config.model_copy(update={"role_doc_path": str(target)}))
    typer.echo(f"role doc for {instance}: {target}")
