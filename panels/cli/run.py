"""`mnemara run`: the solo mode (a team of one) with the line REPL as its face."""

from __future__ import annotations

import os
import sys
from typing import Annotated

import typer

from panels.cli.errors import reports_errors
from panels.cli.instances import InstanceOpt


@reports_errors
def run(
    instance: InstanceOpt,
    no_tui: Annotated[
        bool, typer.Option("--no-tui", help="Plain line REPL (also used when there is no TTY).")
    ] = False,
) -> None:
    """Open a solo session on an instance and talk to it."""
    import anyio

    from panels.repl.loop import run_solo_repl
    from runtime.claude import ClaudeDriver
    from runtime.home import InstancePaths

    InstancePaths.for_name(instance).require()
    wants_tui = not (no_tui or os.environ.get("MNEMARA_NO_TUI") == "1" or not sys.stdin.isatty())
    if wants_tui:
        typer.echo("(the dashboard is not built yet; using the line REPL)", err=True)
    anyio.run(
        lambda: run_solo_repl(instance, driver=ClaudeDriver()),
        backend="trio",
    )
