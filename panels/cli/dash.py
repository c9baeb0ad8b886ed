"""`mnemara attach`: the dashboard on a team's host, in this terminal.

The dashboard (panels/ui) is a process of its own that reads the host's host.sqlite and
writes verbs into its control table; closing it leaves the team running. It needs a
terminal: without one, `mnemara logs -f` and `ps` show the same team as plain lines.
"""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from panels.cli.errors import EXIT_USAGE, fail, reports_errors
from panels.cli.options import TeamOpt


@reports_errors
def attach(
    team: TeamOpt,
    read_only: Annotated[
        bool,
        typer.Option("--read-only", help="Watch only: no input, no verbs."),
    ] = False,
) -> None:
    """Open the dashboard on a team's host (every panel side by side)."""
    from panels.cli.teams import open_host_db, team_state

    open_host_db(team).close()  # a team that never ran: NoHostError, with what to do
    _, state = team_state(team)
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise fail(
            "the dashboard needs a terminal; without one, follow the team with "
            f"`mnemara logs -f -t {team}` and `mnemara ps -t {team}`",
            EXIT_USAGE,
        )
    from panels.ui import make_app

    make_app(state / "host.sqlite", read_only=read_only).run()
