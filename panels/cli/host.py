"""`mnemara up | down | ps | logs | send | approve | deny | halt | resume | pause | inbox | demo`.

A team is named by `--team`: its name (state under $MNEMARA_HOME/_teams/NAME) or its team
file. Viewer commands never talk to the host directly: they read host.sqlite and write
commands into its control table, which the host applies and answers (the outcome is
printed when it arrives). Operator input goes straight onto the bus, so it is kept even
while the host is down and delivered when it starts.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer

from panels.cli.errors import fail, reports_errors

TeamOpt = Annotated[str, typer.Option("--team", "-t", help="Team name or team file.")]
PanelOpt = Annotated[str, typer.Option("--panel", "-p", help="Panel name.")]


def _state(team: str) -> tuple[str, Path]:
    """(team name, state directory) for a team name or a team file."""
    from runtime.home import mnemara_home

    if team.endswith(".toml") or Path(team).is_file():
        from panels.team import load_team

        spec = load_team(team)
        return spec.name, spec.state_dir
    return team, mnemara_home() / "_teams" / team


def _db(team: str) -> Any:
    from panels.host.errors import NoHostError
    from panels.hostdb import HostDbError, connect

    name, state = _state(team)
    try:
        return connect(state / "host.sqlite", create=False)
    except HostDbError:
        raise NoHostError(
            f"team {name!r} has no host state under {state}; start it with `mnemara up TEAM.toml`",
            team=name,
        ) from None


def _running_pid(state: Path) -> int | None:
    from panels.host.process import pid_alive, read_pid

    pid = read_pid(state / "host.pid")
    return pid if pid is not None and pid_alive(pid) else None


def _command(team: str, verb: str, panel: str | None, args: dict[str, Any], wait: float) -> None:
    """Queue a command, then print its outcome when the host has applied it."""
    from panels.hostdb import get_command, read_panels, submit_command

    conn = _db(team)
    if panel is not None and panel not in {r.name for r in read_panels(conn)}:
        raise fail(f"no panel {panel!r} in team {team!r}; see `mnemara ps --team {team}`", 2)
    ident = submit_command(conn, verb, panel=panel, args=args)
    if _running_pid(_state(team)[1]) is None:
        typer.echo(f"queued command {ident}; no host is running, it applies when one starts")
        return
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        command = get_command(conn, ident)
        if command is not None and command.state != "pending":
            typer.echo(f"{verb}: {command.outcome}")
            if command.state == "failed":
                raise typer.Exit(1)
            return
        time.sleep(0.05)
    typer.echo(f"queued command {ident}; the host has not answered yet")


@reports_errors
def up(
    team_file: Annotated[Path, typer.Argument(help="The team file (TOML).", exists=True)],
    headless: Annotated[
        bool, typer.Option("--headless", help="Run in the foreground with plain log lines.")
    ] = False,
) -> None:
    """Start a team's host (detached, or in the foreground with --headless)."""
    import anyio

    from panels.host.process import run_headless, take_pid_file
    from panels.team import load_team

    team = load_team(team_file)
    if headless:
        anyio.run(lambda: run_headless(team, out=lambda s: typer.echo(s)), backend="trio")
        return
    take_pid_file(team)  # refuses now if a host runs; the child takes the file over
    team.pid_path.unlink(missing_ok=True)
    log = team.log_path.open("ab")
    child = subprocess.Popen(
        [sys.executable, "-m", "panels.cli.main", "up", str(team.source), "--headless"],
        stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and child.poll() is None:
        if team.hostdb_path.is_file() and _ready(team.hostdb_path):
            typer.echo(
                f"host of team {team.name!r} started (pid {child.pid}); log: {team.log_path}"
            )
            typer.echo(f"  mnemara ps --team {team.name}    mnemara logs -f --team {team.name}")
            typer.echo("  (the dashboard is not built yet: attach is coming)")
            return
        time.sleep(0.1)
    raise fail(f"the host did not start; see {team.log_path}", 1)


def _ready(path: Path) -> bool:
    from panels.hostdb import connect, read_events

    conn = connect(path)
    try:
        pid = {e.data.get("pid") for e in read_events(conn, kinds=["host_started"], limit=10_000)}
        return bool(read_events(conn, kinds=["host_ready"])) and len(pid) > 0
    finally:
        conn.close()


@reports_errors
def down(team: TeamOpt, wait: Annotated[float, typer.Option(help="Seconds to wait.")] = 60) -> None:
    """Stop a team's host cleanly (turns in flight finish or are released)."""
    import signal

    name, state = _state(team)
    pid = _running_pid(state)
    if pid is None:
        raise fail(f"no host of team {name!r} is running", 1)
    from panels.hostdb import submit_command

    submit_command(_db(team), "shutdown")
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        if _running_pid(state) is None:
            typer.echo(f"host of team {name!r} stopped")
            return
        time.sleep(0.1)
    os.kill(pid, signal.SIGTERM)
    typer.echo(f"host of team {name!r} did not stop in {wait:g}s; sent SIGTERM")


@reports_errors
def ps(team: TeamOpt) -> None:
    """Panels of a team: state, turns, tokens, spend, inbox."""
    from panels.host.account import table
    from panels.hostdb import get_meta, read_panels

    conn = _db(team)
    name, state = _state(team)
    pid = _running_pid(state)
    meta = get_meta(conn)
    running = f"running (pid {pid})" if pid else "stopped"
    typer.echo(f"team {name}: host {running}; bus {meta.get('bus', '?')}")
    for line in table(read_panels(conn)):
        typer.echo(line)


@reports_errors
def logs(
    team: TeamOpt,
    follow: Annotated[
        bool, typer.Option("--follow", "-f", help="Keep printing new events.")
    ] = False,
    panel: Annotated[str | None, typer.Option("--panel", "-p", help="Only this panel.")] = None,
    n: Annotated[int, typer.Option("-n", help="How many recent events to start with.")] = 50,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Every event kind.")] = False,
) -> None:
    """Print the team's event log; -f follows it."""
    from panels.host.account import format_event
    from panels.hostdb import last_events, read_events

    conn = _db(team)
    events = last_events(conn, count=n, panel=panel)
    cursor = events[-1].id if events else 0
    for event in events:
        line = format_event(event, verbose=verbose)
        if line is not None:
            typer.echo(line)
    while follow:
        time.sleep(0.2)
        for event in read_events(conn, after=cursor, panel=panel):
            cursor = event.id
            line = format_event(event, verbose=verbose)
            if line is not None:
                typer.echo(line)


@reports_errors
def send(
    team: TeamOpt,
    to: Annotated[str, typer.Option("--to", help="The panel to talk to.")],
    text: Annotated[list[str], typer.Argument(help="What to say.")],
) -> None:
    """Operator input to a panel (a bus message from `operator`, kept until delivered)."""
    from panels.host.delivery import OPERATOR, operator_route
    from panels.hostdb import get_meta, read_panels
    from peerbus import close_bus, connect_bus, submit

    conn = _db(team)
    if to not in {r.name for r in read_panels(conn)}:
        raise fail(f"no panel {to!r} in team {team!r}; see `mnemara ps --team {team}`", 2)
    bus = connect_bus(Path(get_meta(conn)["bus"]))
    try:
        ident = submit(bus, OPERATOR, operator_route(to), {"type": "input", "text": " ".join(text)})
    finally:
        close_bus(bus)
    typer.echo(f"sent to {to} as message {ident}")


@reports_errors
def approve(
    team: TeamOpt,
    panel: Annotated[str | None, typer.Option("--panel", "-p")] = None,
    request: Annotated[int | None, typer.Option("--request", "-r", help="Request id.")] = None,
    answer: Annotated[str, typer.Option(help="yes, session or always.")] = "yes",
) -> None:
    """Allow a tool call a panel is waiting on (see `mnemara logs`)."""
    args: dict[str, Any] = {"answer": answer}
    if request is not None:
        args["request"] = request
    _command(team, "approve", panel, args, wait=10)


@reports_errors
def deny(
    team: TeamOpt,
    panel: Annotated[str | None, typer.Option("--panel", "-p")] = None,
    request: Annotated[int | None, typer.Option("--request", "-r", help="Request id.")] = None,
) -> None:
    """Refuse a tool call a panel is waiting on."""
    _command(team, "deny", panel, {} if request is None else {"request": request}, wait=10)


@reports_errors
def halt(team: TeamOpt, panel: PanelOpt, reason: Annotated[str, typer.Option()] = "") -> None:
    """Halt a panel: its turn stops now, a halt record is kept, its inbox waits."""
    _command(team, "halt", panel, {"reason": reason or "halted by the operator"}, wait=10)


@reports_errors
def resume(team: TeamOpt, panel: PanelOpt) -> None:
    """Resume a paused or halted panel."""
    _command(team, "resume", panel, {}, wait=10)


@reports_errors
def pause(team: TeamOpt, panel: PanelOpt) -> None:
    """Pause a panel after its turn in flight."""
    _command(team, "pause", panel, {}, wait=10)


@reports_errors
def inbox(
    team: TeamOpt, panel: PanelOpt, state: Annotated[str, typer.Argument(help="on or off")]
) -> None:
    """Switch a panel's peer inbox off or on (on delivers what waited)."""
    if state not in ("on", "off"):
        raise fail("say on or off", 2)
    _command(team, "inbox", panel, {"on": state == "on"}, wait=10)


@reports_errors
def demo(
    keep: Annotated[bool, typer.Option("--keep", help="Keep the scratch directory.")] = False,
) -> None:
    """Run the producer-engineer-watchdog team on the rehearsal model: offline, no key."""
    import shutil

    import anyio

    from panels.host.demo import run_demo

    scratch = Path(tempfile.mkdtemp(prefix="mnemara-demo-"))
    os.environ["MNEMARA_HOME"] = str(scratch / "home")
    try:
        result = anyio.run(lambda: run_demo(scratch, out=typer.echo), backend="trio")
    finally:
        if keep:
            typer.echo(f"kept {scratch}")
        else:
            shutil.rmtree(scratch, ignore_errors=True)
    if not (result.quiet and result.halted and result.claimed == 0):
        raise typer.Exit(1)


host_commands: list[tuple[str, Callable[..., Any]]] = [
    ("up", up),
    ("down", down),
    ("ps", ps),
    ("logs", logs),
    ("send", send),
    ("approve", approve),
    ("deny", deny),
    ("halt", halt),
    ("resume", resume),
    ("pause", pause),
    ("inbox", inbox),
    ("demo", demo),
]
