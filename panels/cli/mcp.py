"""`mnemara mcp -t TEAM --as NAME`: the team as an MCP server for an agent outside it.

The team file admits the agent by name (`[team.external.NAME]`, with the panels it may write
to); the server is that agent on the team's bus (panels/mcp). A client starts it over stdio;
`--http` serves it instead over streamable HTTP, on loopback unless `--bind` says otherwise,
where a token is needed exactly as for `dash --web` (panels/access.py). It works whether or
not the team's host runs: messages wait on the bus, and `status` says the host is down.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from panels.access import MIN_TOKEN
from panels.cli.errors import EXIT_FAILURE, EXIT_HOST, EXIT_USAGE, fail, reports_errors
from panels.cli.options import TeamOpt

if TYPE_CHECKING:
    from panels.team import TeamSpec

DEFAULT_PORT = 8766
TOKEN_ENV = "MNEMARA_MCP_TOKEN"


@reports_errors
def mcp(
    team: TeamOpt,
    as_: Annotated[
        str,
        typer.Option(
            "--as",
            metavar="NAME",
            help="Who the client is: an agent the team file admits ([team.external.NAME]).",
        ),
    ],
    http: Annotated[
        bool,
        typer.Option("--http", help="Serve streamable HTTP instead of stdio."),
    ] = False,
    port: Annotated[
        int | None,
        typer.Option(
            "--port",
            metavar="N",
            min=0,
            max=65535,
            help=f"With --http: the port (default {DEFAULT_PORT}; 0: any free one).",
        ),
    ] = None,
    bind: Annotated[
        str | None,
        typer.Option(
            "--bind",
            metavar="ADDR",
            help="With --http: the address to listen on (default 127.0.0.1). Any address "
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
            help=f"With --http: a secret of {MIN_TOKEN}+ characters every request must carry "
            f"as `Authorization: Bearer TOKEN`. Or set {TOKEN_ENV}, which `ps` does not show.",
        ),
    ] = None,
) -> None:
    """Serve the team to an MCP client (Claude Code, another agent) as an admitted agent.

    Tools: send (to a panel, or '*'), inbox, ack, wait, status, events, dead_letters. The
    agent never writes on an operator route and never answers approvals. Over stdio by
    default; for Claude Code:

        claude mcp add mnemara -- mnemara mcp -t trio --as claude-code

    --http serves http://127.0.0.1:8766/mcp until Ctrl-C.
    """
    if not http:
        # The token is not checked: MNEMARA_MCP_TOKEN may be set for every `mcp`.
        given = [name for name, value in (("--port", port), ("--bind", bind)) if value is not None]
        if given:
            verb = "are" if len(given) > 1 else "is"
            raise fail(f"{' and '.join(given)} {verb} for HTTP: add --http", EXIT_USAGE)
    address = bind or "127.0.0.1"
    if http:
        from panels.access import listen_refusal

        refused = listen_refusal(address, token, address_flag="--bind", token_env=TOKEN_ENV)
        if refused is not None:
            raise fail(refused, EXIT_USAGE)
    spec = _team(team)
    agent = spec.external.get(as_)
    if agent is None:
        admitted = ", ".join(spec.external) or "none yet"
        where = spec.source or "the team file"
        raise fail(
            f"{as_!r} is not admitted to team {spec.name!r} (admitted: {admitted}); add "
            f"[team.external.{as_}] with writes_to = [...] to {where}",
            EXIT_USAGE,
        )
    _serve(spec, as_, http=http, address=address, port=port, token=token)


def _team(team: str) -> TeamSpec:
    """The team file of `team` (given, or the one its host recorded when it last started)."""
    from panels.cli.teams import is_team_file, open_host_db, team_state
    from panels.errors import NoHostError
    from panels.hostdb import get_meta
    from panels.team import load_team

    if is_team_file(team):
        return load_team(team)
    try:
        conn = open_host_db(team)
    except NoHostError as exc:
        raise fail(
            f"team {exc.team!r} never ran here, so its team file is not on record: give the "
            "team file (-t PATH/team.toml), or start the team (`mnemara up TEAM.toml`)",
            EXIT_HOST,
        ) from None
    try:
        source = get_meta(conn).get("source", "")
    finally:
        conn.close()
    if not source:
        name = team_state(team)[0]
        raise fail(
            f"{name!r} has no team file on record (a solo instance admits no external agent); "
            "give a team's name or its team file",
            EXIT_USAGE,
        )
    return load_team(source)


def _serve(
    spec: TeamSpec, name: str, *, http: bool, address: str, port: int | None, token: str | None
) -> None:
    import anyio

    from panels.mcp import serve_team

    sock = None
    if http:
        from panels.mcp.transports import listen

        number = DEFAULT_PORT if port is None else port
        try:
            sock = listen(address, number)
        except OSError as exc:
            raise fail(
                f"cannot listen on {address} port {number} ({exc.strerror or exc}); "
                "choose another with --port or --bind",
                EXIT_FAILURE,
            ) from None

    def ready(where: str) -> None:
        if sock is None:
            typer.echo(f"mnemara mcp: team {spec.name} as {name!r} over stdio", err=True)
            return
        typer.echo(f"serving team {spec.name} to MCP clients as {name!r}: {where}")
        if token is not None:
            typer.echo("every request needs the header `Authorization: Bearer TOKEN`")
        typer.echo("Ctrl-C stops serving; the team keeps running.")

    anyio.run(lambda: serve_team(spec, name, sock=sock, token=token, ready=ready))
