"""`mnemara run`: the solo mode, a team of one under the host with the line REPL as its face."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated

import typer

from panels.cli.errors import EXIT_FAILURE, EXIT_USAGE, fail, reports_errors
from panels.cli.options import InstanceOpt


@reports_errors
def run(
    instance: InstanceOpt,
    no_tui: Annotated[
        bool, typer.Option("--no-tui", help="Plain line REPL (also used when there is no TTY).")
    ] = False,
    rehearsal: Annotated[
        Path | None,
        typer.Option(
            "--rehearsal",
            metavar="FILE",
            help="Answer from this rehearsal script (offline, no tokens), as `rehearse` does.",
        ),
    ] = None,
    panel: Annotated[
        str | None,
        typer.Option(
            "--panel",
            "-p",
            metavar="NAME",
            help="With --rehearsal: the script's panel that answers (default: the one named "
            "like the instance, or the script's only one).",
        ),
    ] = None,
) -> None:
    """Run an instance as a team of one and talk to it (its peer_poll settings work too).

    Exits 1 when the host gives up on the panel (a corrupt file, failures a restart will not
    fix); the reason is printed above.
    """
    import anyio

    from panels.host.solo import solo_team
    from panels.repl.face import run_solo

    if panel is not None and rehearsal is None:
        raise fail(
            "--panel chooses a panel of a rehearsal script: give --rehearsal FILE", EXIT_USAGE
        )
    wants_tui = not (no_tui or os.environ.get("MNEMARA_NO_TUI") == "1" or not sys.stdin.isatty())
    if rehearsal is not None:
        from panels.cli.rehearse import run_rehearsal

        _say_no_dashboard(wants_tui)
        run_rehearsal(instance, rehearsal, panel, [], None)
        return
    team = solo_team(instance)
    _say_no_dashboard(wants_tui)
    if not anyio.run(lambda: run_solo(team), backend="trio"):
        raise typer.Exit(EXIT_FAILURE)


def _say_no_dashboard(wants_tui: bool) -> None:
    if wants_tui:
        typer.echo("(the dashboard is not built yet; using the line REPL)", err=True)
