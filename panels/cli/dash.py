"""`mnemara attach` and `mnemara dash`: the dashboard on a team's host, in this terminal or
in a browser.

The dashboard (panels/ui) is a process of its own that reads the host's host.sqlite and
writes verbs into its control table; closing it leaves the team running. It needs a
terminal: without one, `mnemara logs -f` and `ps` show the same team as plain lines.
`dash --web` serves the same app to browsers (panels/ui/web.py). Anyone who reaches the
server can steer the team, so it listens on loopback unless told otherwise, and any other
address needs a token.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from panels.access import MIN_TOKEN
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
    """Open the dashboard on a team's host (every panel side by side); closing it leaves the
    team running."""
    name, hostdb = _hostdb(team, web=False)
    from panels.cli.teams import running_pid
    from panels.ui import make_app

    make_app(hostdb, read_only=read_only).run()
    typer.echo(after_closing(name, running_pid(hostdb.parent) is not None))


def after_closing(team: str, running: bool) -> str:
    """The line `attach` leaves on the terminal: what the team does now. Pure."""
    if running:
        return f"the team {team} keeps running; `mnemara down -t {team}` stops it"
    return f"the host of team {team} is not running; `mnemara ps -t {team}` says how it ended"


DEFAULT_PORT = 8765
TOKEN_ENV = "MNEMARA_DASH_TOKEN"


@reports_errors
def dash(
    team: TeamOpt,
    web: Annotated[
        bool,
        typer.Option("--web", help="Serve the dashboard to a browser instead of this terminal."),
    ] = False,
    port: Annotated[
        int | None,
        typer.Option(
            "--port",
            metavar="N",
            min=1,
            max=65535,
            help=f"With --web: the port to listen on (default {DEFAULT_PORT}).",
        ),
    ] = None,
    host: Annotated[
        str | None,
        typer.Option(
            "--host",
            metavar="ADDR",
            help="With --web: the address to listen on (default 127.0.0.1). Any address "
            "but loopback (127.0.0.1, ::1, localhost) needs --token too.",
        ),
    ] = None,
    token: Annotated[
        str | None,
        typer.Option(
            "--token",
            metavar="TOKEN",
            envvar=TOKEN_ENV,
            show_envvar=False,
            help=f"With --web: a secret of {MIN_TOKEN}+ characters every request must carry "
            "(the printed address has it). Or set MNEMARA_DASH_TOKEN, which `ps` does not show.",
        ),
    ] = None,
    read_only: Annotated[
        bool,
        typer.Option("--read-only", help="Watch only: no input, no verbs."),
    ] = False,
) -> None:
    """Open the dashboard: in a browser with --web, else in this terminal (as `attach`)."""
    if not web:
        # The token is not checked: MNEMARA_DASH_TOKEN may be set for every `dash`.
        given = [name for name, value in (("--port", port), ("--host", host)) if value]
        if given:
            raise fail(f"{' and '.join(given)} are for a browser: add --web", EXIT_USAGE)
        attach(team, read_only=read_only)
        return
    from panels.access import is_loopback, listen_refusal
    from panels.ui.web import serve

    address = host or "127.0.0.1"
    loopback = is_loopback(address)
    refused = listen_refusal(address, token, address_flag="--host", token_env=TOKEN_ENV)
    if refused is not None:
        raise fail(refused, EXIT_USAGE)
    name, hostdb = _hostdb(team, web=True)
    listen = port or DEFAULT_PORT
    url = page_url(address, listen, token)

    def ready() -> None:
        mode = " (read-only)" if read_only else ""
        typer.echo(f"serving team {name}'s dashboard{mode}: open {url}")
        typer.echo("Ctrl-C stops serving; the team keeps running.")

    try:
        serve(
            hostdb,
            host=address,
            port=listen,
            token=token,
            loopback=loopback,
            read_only=read_only,
            title=f"mnemara · {name}",
            on_ready=ready,
        )
    except OSError as exc:
        raise fail(
            f"cannot listen on {address} port {listen} ({exc.strerror or exc}); "
            "choose another with --port or --host"
        ) from None


def page_url(address: str, port: int, token: str | None) -> str:
    """The address to open: a wildcard address is named by this machine's name, an IPv6
    one in brackets, and the token rides in the query (the page moves it to a cookie)."""
    import socket
    from urllib.parse import quote

    if address in ("0.0.0.0", "::", ""):
        address = socket.gethostname()
    elif ":" in address and not address.startswith("["):
        address = f"[{address}]"
    query = f"?token={quote(token, safe='')}" if token is not None else ""
    return f"http://{address}:{port}/{query}"


def _hostdb(team: str, *, web: bool) -> tuple[str, Path]:
    """The team's name and host.sqlite; refuses a team that never ran, and (for the terminal
    dashboard) standard streams that are not a terminal."""
    from panels.cli.teams import open_host_db, team_state

    open_host_db(team).close()  # a team that never ran: NoHostError, with what to do
    name, state = team_state(team)
    if not web and not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise fail(
            "the dashboard needs a terminal; without one, follow the team with "
            f"`mnemara logs -f -t {team}` and `mnemara ps -t {team}`",
            EXIT_USAGE,
        )
    return name, state / "host.sqlite"
