"""`mnemara run`: the solo mode, a team of one under the host with the line REPL as its face."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from panels.cli.errors import EXIT_FAILURE, EXIT_USAGE, fail, reports_errors
from panels.cli.options import InstanceOpt, SandboxOpt, sandbox_mode

if TYPE_CHECKING:
    import anyio.abc

    from panels.host.services import DriverFactory
    from panels.host.thread import StopFn
    from panels.team import TeamSpec
    from runtime.rehearsal import Script


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
    replay_backlog: Annotated[
        bool,
        typer.Option(
            "--replay-backlog",
            help="On the first run against a foreign peer table (peer_db_path), deliver the "
            "rows already in it; by default they are skipped, from the original's "
            "peer_poll_watermark or the table's highest id, as the original does.",
        ),
    ] = False,
    sandbox: SandboxOpt = "auto",
) -> None:
    """Run an instance as a team of one and talk to it (its peer_poll settings work too).

    On a terminal the dashboard opens over the instance's pane (its host runs in this
    process; quitting the dashboard stops it), with --rehearsal too; --no-tui,
    MNEMARA_NO_TUI=1 or no terminal gives the line REPL. Exits 1 when the host gives up on
    the panel (a corrupt file, failures a restart will not fix); the reason is printed.
    """
    import anyio

    from panels.cli.front import wants_dashboard
    from panels.host.solo import solo_team
    from panels.repl.face import run_solo
    from runtime.instance.home import InstancePaths
    from runtime.policy.rules import load_rules
    from runtime.store.schema import refuse_original

    mode = sandbox_mode(sandbox)
    if panel is not None and rehearsal is None:
        raise fail(
            "--panel chooses a panel of a rehearsal script: give --rehearsal FILE", EXIT_USAGE
        )
    if replay_backlog and not solo_team(instance).take_over_original:
        raise fail(
            "--replay-backlog is for an instance that polls a foreign table "
            "(peer_poll_enabled with peer_db_path in its config.json); this one does not",
            EXIT_USAGE,
        )
    # A bad permissions.json would only stop the panel once the host runs: say so now (exit 8).
    load_rules(InstancePaths.for_name(instance).permissions)
    # So would an original mnemara's store, which only `migrate` converts: before any lease.
    refuse_original(InstancePaths.for_name(instance).turns)
    on_dashboard = wants_dashboard(no_tui)
    if rehearsal is not None and not on_dashboard:
        from panels.cli.rehearse import run_rehearsal

        if replay_backlog:
            raise fail("--replay-backlog does not apply to a rehearsal without the dashboard", 2)

        run_rehearsal(instance, rehearsal, panel, [], None, mode)
        return
    team = solo_team(instance, replay_backlog=replay_backlog, sandbox=mode)
    if on_dashboard:
        from panels.cli.rehearse import checked_script

        script = None if rehearsal is None else checked_script(instance, rehearsal, panel)
        ok = _run_dashboard(team, script)
    else:
        ok = anyio.run(lambda: run_solo(team), backend="trio")
    if not ok:
        raise typer.Exit(EXIT_FAILURE)


@asynccontextmanager
async def _rehearsal_drivers(
    script: Script, panel: str, team: TeamSpec, totals: list[str]
) -> AsyncIterator[DriverFactory]:
    """`rehearse`'s driver for `panel` as the team's driver factory; the usage total is
    appended to `totals` at the end."""
    from panels.cli.rehearse import rehearsal_driver, usage_line

    async with rehearsal_driver(script, panel, team) as (driver, server, _):
        try:
            yield lambda spec: driver
        finally:
            totals.append(f"rehearsal total: {usage_line(server.requests(panel))}")


def _run_dashboard(team: TeamSpec, rehearsal: tuple[Script, str] | None = None) -> bool:
    """The one-panel team's host in a thread (answered by `rehearsal`'s script and panel
    when given), the dashboard in front; False when the host gave up on the panel (its
    reason is printed after the dashboard closes)."""
    from panels.cli.front import dashboard_over
    from panels.host.host import Host
    from panels.host.thread import HostThread, serve_host
    from panels.host.turns.confine import team_sandbox
    from panels.hostdb import Logged
    from panels.hostdb.catalogue import PanelGivenUp
    from panels.repl.face import SOLO_RESTARTS
    from panels.text import clean
    from panels.unconfined import told

    given_up: list[PanelGivenUp] = []
    totals: list[str] = []

    def note(logged: Logged) -> None:
        if isinstance(logged.event, PanelGivenUp):
            given_up.append(logged.event)

    async def work(*, task_status: anyio.abc.TaskStatus[StopFn]) -> Host:
        async with AsyncExitStack() as stack:
            drivers = None
            if rehearsal is not None:
                drivers = await stack.enter_async_context(
                    _rehearsal_drivers(*rehearsal, team, totals)
                )
            # Built here, in the host's thread: a Host makes trio objects, which need trio.
            host = Host(
                team,
                drivers=drivers,
                policy=SOLO_RESTARTS,
                listeners=[note],
                redeliver_failed_input=False,  # as the REPL: the operator sees the error at once
                holder=f"`mnemara run` of instance {team.panels[0].instance!r}",
            )
            if drivers is not None:  # built here, as the team says: the dashboard says how
                host.sandbox_note = told(team_sandbox(team)[1], team)
            return await serve_host(host, pid_file=True, task_status=task_status)

    dashboard_over(HostThread(work), team.hostdb_path, stopping=f"stopping {team.name}…")
    for line in totals:
        typer.echo(line)
    for event in given_up:
        typer.echo(f"mnemara: the host gave up on {event.panel}: {clean(event.reason)}", err=True)
    return not given_up
