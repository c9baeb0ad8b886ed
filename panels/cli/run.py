"""`mnemara run`: the solo mode, a team of one under the host with the line REPL as its face."""

from __future__ import annotations

import os
import sys
from pathlib import Path
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
    rehearsal: Annotated[
        Path | None,
        typer.Option(
            metavar="FILE", help="Answer from this rehearsal script (offline, no tokens)."
        ),
    ] = None,
) -> None:
    """Run an instance as a team of one and talk to it (its peer_poll settings work too)."""
    import anyio

    from panels.host.solo import solo_team
    from panels.repl.face import run_solo

    team = solo_team(instance, rehearsal=rehearsal.resolve() if rehearsal else None)
    wants_tui = not (no_tui or os.environ.get("MNEMARA_NO_TUI") == "1" or not sys.stdin.isatty())
    if wants_tui:
        typer.echo("(the dashboard is not built yet; using the line REPL)", err=True)
    anyio.run(lambda: run_solo(team), backend="trio")
