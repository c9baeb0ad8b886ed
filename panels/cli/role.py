"""`mnemara role`: point an instance at a role doc, or download one once into it."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from panels.cli.errors import EXIT_USAGE, fail, reports_errors
from panels.cli.instances import hold_instance
from panels.cli.options import InstanceOpt

if TYPE_CHECKING:
    from runtime.home import InstancePaths


@reports_errors
def role(
    instance: InstanceOpt,
    set_: Annotated[
        Path | None,
        typer.Option("--set", metavar="FILE", help="Use this local Markdown file as the role doc."),
    ] = None,
    set_from_url: Annotated[
        str | None,
        typer.Option(
            "--set-from-url",
            metavar="URL",
            help="Download an https role doc once into the instance's role.md.",
        ),
    ] = None,
) -> None:
    """Show or set the role doc (re-read from disk on every turn)."""
    from runtime.config import load_config, save_config
    from runtime.home import InstancePaths

    paths = InstancePaths.for_name(instance).require()
    if set_ and set_from_url:
        raise fail("give either --set or --set-from-url, not both", EXIT_USAGE)
    if set_ is None and set_from_url is None:
        typer.echo(load_config(paths.config).role_doc_path or "(no role doc set)")
        return
    # Leased before the download, so an instance in use is refused before anything is fetched,
    # and held until config.json is saved, so no host starts on the half-changed instance.
    with hold_instance(paths, "role", "change its role doc"):
        config = load_config(paths.config)
        target = _new_role_doc(paths, set_, set_from_url)
        save_config(paths.config, config.model_copy(update={"role_doc_path": str(target)}))
    typer.echo(f"role doc for {instance}: {target}")


def _new_role_doc(paths: InstancePaths, set_: Path | None, set_from_url: str | None) -> Path:
    """The role doc to point at: a checked local file, or one downloaded into the instance."""
    from runtime.roledoc import read_role_doc

    if set_ is not None:
        target = set_.expanduser().resolve()
        read_role_doc(target)
        return target
    from runtime.config import write_text_atomic
    from runtime.fetch import fetch_role_doc

    text = fetch_role_doc(str(set_from_url))
    write_text_atomic(paths.role, text)
    typer.echo(f"saved {len(text)} chars to {paths.role} (never re-fetched; edit it freely)")
    return paths.role
