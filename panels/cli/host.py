"""`mnemara up | down | ps | logs | demo`, and the list of every team command.

A team is named by `--team/-t` (panels/cli/teams.py): its name (state under
$MNEMARA_HOME/_teams/NAME), its team file, or the name of an instance that `mnemara run`
hosts (state in <instance>/host/). Viewer commands never talk to the host directly: they
read host.sqlite; the commands that steer panels (panels/cli/steer.py) write verbs into its
control table.
"""

from __future__ import annotations

import functools
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from panels.cli import dash, steer
from panels.cli.errors import EXIT_FAILURE, fail, reports_errors
from panels.cli.options import TeamOpt, not_negative
from panels.cli.teams import check_panel, open_host_db, running_pid, team_state

if TYPE_CHECKING:
    from panels.host.demo import DemoResult
    from panels.team import TeamSpec

START_WAIT = 30.0  # seconds `up` waits for a detached host to say it is ready


def _life_id(value: str) -> str:
    """Option callback: a life id is one word (it is written in the pid file after the pid)."""
    if value and not re.fullmatch(r"[A-Za-z0-9_-]{1,64}", value):
        raise typer.BadParameter("a life id is 1 to 64 letters, digits, '_' or '-'")
    return value


@reports_errors
def up(
    team_file: Annotated[
        Path,
        typer.Argument(metavar="FILE", help="The team file (TOML).", exists=True, dir_okay=False),
    ],
    headless: Annotated[
        bool, typer.Option("--headless", help="Run in the foreground with plain log lines.")
    ] = False,
    detach: Annotated[
        bool,
        typer.Option(
            "--detach", help="Return once the host is started; do not open the dashboard."
        ),
    ] = False,
    life: Annotated[
        str,
        typer.Option(
            "--life",
            metavar="ID",
            hidden=True,
            callback=_life_id,
            help="This start's life id (from up).",
        ),
    ] = "",
) -> None:
    """Start a team's host in the background and open the dashboard on it (on a terminal).

    --detach (or no terminal) returns once the host is ready; closing the dashboard leaves
    the team running. --headless runs the host in the foreground with plain log lines. When
    the panels' tools run unconfined (the sandbox off, or bubblewrap missing), it says so on
    stderr, with why and what to do.
    """
    import anyio

    from panels.host.process import new_life_id, run_headless, take_pid_file
    from panels.host.turns.orphans import without_marker
    from panels.team import load_team

    team = load_team(team_file)
    refuse_originals(team)
    if headless:
        anyio.run(
            lambda: run_headless(team, out=lambda s: typer.echo(s), life=life), backend="trio"
        )
        return
    take_pid_file(team)  # refuses now if a host runs; the child takes the file over
    team.pid_path.unlink(missing_ok=True)
    start = team.log_path.stat().st_size if team.log_path.is_file() else 0
    # The child is told its life id, so the wait below ends on its own "ready", never on the
    # one a previous life (perhaps killed with -9) left in the log.
    life = new_life_id()
    with team.log_path.open("ab") as log:
        child = subprocess.Popen(
            [sys.executable, "-m", "panels.cli.main", "up", str(team.source), "--headless",
             "--life", life],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True, env=without_marker(os.environ),
        )  # fmt: skip
    deadline = time.monotonic() + START_WAIT
    while time.monotonic() < deadline and child.poll() is None:
        if team.hostdb_path.is_file() and _ready(team.hostdb_path, life):
            typer.echo(
                f"host of team {team.name!r} started (pid {child.pid}); log: {team.log_path}"
            )
            typer.echo(f"  mnemara ps -t {team.name}    mnemara logs -f -t {team.name}")
            said = _unconfined(team.hostdb_path)
            if said is not None:  # on the terminal, not only in the log: the tools are loose
                typer.echo(f"mnemara: warning: {said}", err=True)
            if not detach:
                _attach_after_up(team.name, team.hostdb_path)
            return
        time.sleep(0.1)
    code = child.poll()
    if code is None:
        raise fail(
            f"the host of team {team.name!r} has not said it is ready after {START_WAIT:g}s; "
            f"it goes on starting (pid {child.pid}): watch {team.log_path} or "
            f"`mnemara ps -t {team.name}`",
            EXIT_FAILURE,
        )
    reason = _why_it_stopped(team.log_path, start)
    raise fail(
        f"the host of team {team.name!r} did not start: {reason} (log: {team.log_path})",
        code or EXIT_FAILURE,
    )


def refuse_originals(team: TeamSpec) -> None:
    """Refuse, before a host starts, a team whose panels use an original mnemara's instance
    not yet migrated (only `migrate` converts one); names the file and `migrate`."""
    from runtime.instance.home import InstancePaths
    from runtime.store.schema import refuse_original

    home = team.state_dir.parents[1]  # <home>/_teams/<name>
    for spec in team.panels:
        refuse_original(InstancePaths.for_name(spec.instance, home).turns)


def _attach_after_up(name: str, hostdb_path: Path) -> None:
    """On a terminal: the dashboard on the host just started; the team outlives it."""
    from panels.cli.front import open_dashboard, wants_dashboard

    if not wants_dashboard():
        return
    open_dashboard(hostdb_path)
    typer.echo(f"the dashboard is closed; the host of team {name!r} goes on running")
    typer.echo(f"  mnemara attach -t {name}    mnemara down -t {name}")


def _why_it_stopped(log: Path, start: int) -> str:
    """The error lines the host wrote to its log since `start`, without their prefix."""
    try:
        with log.open("rb") as f:
            f.seek(start)
            text = f.read().decode("utf-8", "replace")
    except OSError:
        return "its log cannot be read"
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    said = [line.removeprefix("mnemara: ") for line in lines if line.startswith("mnemara: ")]
    return "; ".join(said) or (lines[-1] if lines else "it wrote nothing")


def _unconfined(path: Path) -> str | None:
    """What the host just started says of its sandbox when its panels' tools run unconfined
    (its note, from host.sqlite), else None."""
    from panels.hostdb import connect, get_meta, read_panels
    from panels.text import clean
    from panels.unconfined import META_KEY, warning

    conn = connect(path)
    try:
        said = warning(get_meta(conn).get(META_KEY, ""), read_panels(conn))
    finally:
        conn.close()
    return None if said is None else clean(said, 400)


def _ready(path: Path, life: str) -> bool:
    """The host of life `life` has said it is ready (another life's "ready" does not count)."""
    from panels.hostdb import connect, read_events
    from panels.hostdb.catalogue import HostReady

    conn = connect(path)
    try:
        after = 0
        while page := read_events(conn, after=after, kinds=["host_ready"]):
            if any(isinstance(e.event, HostReady) and e.event.life == life for e in page):
                return True
            after = page[-1].id
        return False
    finally:
        conn.close()


@reports_errors
def down(
    team: TeamOpt,
    wait: Annotated[
        float,
        typer.Option(
            "--wait",
            metavar="SECONDS",
            callback=not_negative,
            help="How long to wait for a clean stop before sending SIGTERM.",
        ),
    ] = 60,
) -> None:
    """Stop a team's host cleanly (turns in flight finish or are released)."""
    import signal

    from panels.hostdb import submit_command
    from panels.hostdb.verbs import Shutdown

    conn = open_host_db(team)  # a team that never ran: NoHostError (10)
    try:
        name, state = team_state(team)
        pid = running_pid(state)
        if pid is None:
            raise fail(f"no host of team {name!r} is running; nothing to stop", EXIT_FAILURE)
        submit_command(conn, Shutdown())
    finally:
        conn.close()
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        if running_pid(state) is None:
            typer.echo(f"host of team {name!r} stopped")
            return
        time.sleep(0.1)
    os.kill(pid, signal.SIGTERM)
    typer.echo(f"host of team {name!r} did not stop in {wait:g}s; sent SIGTERM")


@reports_errors
def ps(team: TeamOpt) -> None:
    """Panels of a team: state, turns, tokens, spend, inbox, and whether their tools run in
    the sandbox (a warning says why not, and what to do)."""
    from panels.host.control.account import ps_header, table
    from panels.hostdb import get_meta, read_panels
    from panels.text import clean
    from panels.unconfined import META_KEY, warning

    conn = open_host_db(team)
    name, state = team_state(team)
    pid = running_pid(state)
    try:
        meta = get_meta(conn)
        rows = read_panels(conn)
    finally:
        conn.close()
    typer.echo(ps_header(name, pid, meta, str(state / "host.log")))
    for line in table(rows, name):
        typer.echo(line)
    said = warning(meta.get(META_KEY, ""), rows)
    if said is not None:
        typer.echo(f"warning: {clean(said, 400)}")


@reports_errors
def logs(
    team: TeamOpt,
    follow: Annotated[
        bool, typer.Option("--follow", "-f", help="Keep printing new events.")
    ] = False,
    panel: Annotated[
        str | None, typer.Option("--panel", "-p", metavar="NAME", help="Only this panel.")
    ] = None,
    n: Annotated[
        int,
        typer.Option(
            "-n", metavar="N", callback=not_negative, help="Show the last N lines first (0: none)."
        ),
    ] = 50,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Every event kind.")] = False,
) -> None:
    """Print the team's event log; -f follows it."""
    from panels.host.control.account import format_event, last_lines
    from panels.hostdb import read_events, read_panels

    conn = open_host_db(team)
    try:
        if panel is not None:
            check_panel(panel, [r.name for r in read_panels(conn)], team)
        lines, cursor = last_lines(conn, n, panel=panel, verbose=verbose)
        for line in lines:
            typer.echo(line)
        if not lines and not follow:
            typer.echo("(no events to show yet)" if n else "(nothing asked for: -n 0)")
        while follow:
            time.sleep(0.2)
            for event in read_events(conn, after=cursor, panel=panel):
                cursor = event.id
                shown = format_event(event, verbose=verbose)
                if shown is not None:
                    typer.echo(shown)
    finally:
        conn.close()


@reports_errors
def demo(
    keep: Annotated[bool, typer.Option("--keep", help="Keep the scratch directory.")] = False,
    no_tui: Annotated[
        bool,
        typer.Option("--no-tui", help="Print the story as lines (also used with no terminal)."),
    ] = False,
) -> None:
    """Run the producer-engineer-watchdog team on the rehearsal model: offline, no key.

    On a terminal the dashboard shows the three panels at work (answer the engineer's
    approval in it; ctrl+q closes it and stops the team); otherwise the story is
    printed as lines and the demo answers the approval itself. A summary follows.
    """
    import shutil
    import tempfile

    import anyio

    from panels.cli.front import wants_dashboard
    from panels.host.demo import run_demo
    from panels.host.process import until_interrupted

    scratch = Path(tempfile.mkdtemp(prefix="mnemara-demo-"))
    os.environ["MNEMARA_HOME"] = str(scratch / "home")
    on_dashboard = wants_dashboard(no_tui)
    try:
        if on_dashboard:
            result = _demo_on_dashboard(scratch)
        else:
            demo_run = functools.partial(run_demo, scratch, out=typer.echo)
            result = anyio.run(until_interrupted, demo_run, backend="trio")
    finally:
        if keep:
            typer.echo(f"kept {scratch}")
        else:
            shutil.rmtree(scratch, ignore_errors=True)
    if result.claimed != 0:
        raise typer.Exit(EXIT_FAILURE)
    if on_dashboard and not result.quiet:
        # Closed before the story ended: the operator's choice, not a failure.
        typer.echo("(the dashboard was closed before the story ended: run it again to see it all)")
    elif not (result.quiet and result.halted):
        raise typer.Exit(EXIT_FAILURE)


def _demo_on_dashboard(scratch: Path) -> DemoResult:
    """The demo's host in a thread, the dashboard in front; the summary once it closes."""
    from panels.cli.front import dashboard_over
    from panels.host.demo import demo_team, run_demo
    from panels.host.thread import HostThread

    team = demo_team(scratch)
    work = functools.partial(run_demo, scratch, out=typer.echo, team=team, viewer=True)
    typer.echo("the dashboard opens; ctrl+q closes it and stops the demo team")
    return dashboard_over(HostThread(work), team.hostdb_path, stopping="stopping the demo team…")


host_commands: list[tuple[str, Callable[..., Any]]] = [
    ("up", up),
    ("down", down),
    ("ps", ps),
    ("logs", logs),
    ("attach", dash.attach),
    ("dash", dash.dash),
    ("send", steer.send),
    ("approve", steer.approve),
    ("deny", steer.deny),
    ("halt", steer.halt),
    ("resume", steer.resume),
    ("pause", steer.pause),
    ("stop", steer.stop),
    ("inbox", steer.inbox),
    ("demo", demo),
]
