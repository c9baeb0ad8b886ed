"""`mnemara rewind`: a panel's files back to how they were before one of its turns.

Which panel: `-t TEAM -p PANEL` (`-p` may be left out when the team has one panel), or
`-i INSTANCE`, the instance's own checkpoints, whichever team ran it. Which checkpoint:
`--turn N`, the number `--list` shows (each is taken before a turn); by default the latest
turn's, which undoes the last turn.

While the team's host runs, the rewind is the `rewind` verb: it goes through the control
table and is applied when no panel of the team is in a turn (they share the working
directory), and the host notes it in the panel's window. While no host runs, the command
rewinds itself, holding the instance's lease so no host starts half way, and notes it in
the window's store; a verb left queued for the next host would restore the files at some
later, unknown moment. `--list` only reads, host or not.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer

from panels.cli.errors import EXIT_FAILURE, EXIT_USAGE, fail, reports_errors
from panels.cli.options import TEAM_HELP

WAIT = 120.0  # seconds for the host's answer: it waits for the turns in flight to end

TeamArg = Annotated[str | None, typer.Option("--team", "-t", metavar="NAME", help=TEAM_HELP)]
PanelArg = Annotated[
    str | None,
    typer.Option(
        "--panel", "-p", metavar="NAME", help="The panel (may be left out in a team of one)."
    ),
]
InstanceArg = Annotated[
    str | None,
    typer.Option(
        "--instance",
        "-i",
        metavar="NAME",
        help="The instance whose checkpoints to use (instead of --team and --panel).",
    ),
]


@dataclass(frozen=True)
class Target:
    """The panel a rewind is for: its instance's files, and the host that may run it."""

    paths: Any  # InstancePaths
    team: str | None  # a team (name, file or solo instance) whose host may run the panel
    panel: str


@reports_errors
def rewind(
    team: TeamArg = None,
    panel: PanelArg = None,
    instance: InstanceArg = None,
    turn: Annotated[
        int | None,
        typer.Option(
            "--turn",
            metavar="N",
            min=1,
            help="The checkpoint to go back to, by the number --list shows (each is taken "
            "before a turn). Default: the latest turn's, which undoes the last turn.",
        ),
    ] = None,
    list_: Annotated[
        bool,
        typer.Option(
            "--list", help="List the checkpoints: number, time, the turn, what it changed."
        ),
    ] = False,
) -> None:
    """Restore a panel's files to how they were before one of its turns (undo a turn).

    Changed files are restored, files made since are removed and files deleted since come
    back; files a .gitignore ignores are left alone. A checkpoint of the files as they are
    is taken first, so a rewind can itself be undone."""
    if list_ and turn is not None:
        raise fail("--list lists; give --turn without it to rewind", EXIT_USAGE)
    target = _target(team, panel, instance)
    if list_:
        _list(target)
        return
    _rewind(target, turn)


def _target(team: str | None, panel: str | None, instance: str | None) -> Target:
    if instance is not None:
        if team is not None or panel is not None:
            raise fail("give --instance alone, or --team with --panel", EXIT_USAGE)
        return _by_instance(instance)
    if team is None:
        raise fail("name the panel: --team NAME --panel NAME, or --instance NAME", EXIT_USAGE)
    return _by_team(team, panel)


def _by_team(team: str, panel: str | None) -> Target:
    from panels.cli.teams import check_panel, open_host_db
    from panels.hostdb import get_meta, read_panels
    from runtime.instance.home import InstancePaths

    conn = open_host_db(team)
    try:
        names = [r.name for r in read_panels(conn)]
        meta = get_meta(conn)
    finally:
        conn.close()
    if panel is None:
        if len(names) != 1:
            raise fail(f"name the panel with --panel: one of {', '.join(names) or 'none'}",
                       EXIT_USAGE)  # fmt: skip
        panel = names[0]
    check_panel(panel, names, team)
    root = meta.get(f"instance:{panel}")
    paths = InstancePaths(Path(root).name, Path(root)) if root else InstancePaths.for_name(panel)
    return Target(paths, team, panel)


def _by_instance(instance: str) -> Target:
    """The instance's own checkpoints; the host that holds its lease, if any, is found from
    the lease (its team) and its meta (which panel runs the instance)."""
    from runtime.instance.home import InstancePaths
    from runtime.instance.lease import current_owner

    paths = InstancePaths.for_name(instance).require()
    owner = current_owner(paths)
    if owner is None or not owner.team:
        return Target(paths, None, instance)
    from panels.cli.teams import open_host_db
    from panels.hostdb import get_meta

    conn = open_host_db(owner.team)
    try:
        meta = get_meta(conn)
    finally:
        conn.close()
    for key, root in meta.items():
        if key.startswith("instance:") and Path(root) == paths.root:
            return Target(paths, owner.team, key.removeprefix("instance:"))
    return Target(paths, owner.team, instance)


def _store(target: Target) -> Any:
    from runtime.checkpoint import open_store

    return open_store(target.paths.root)


def _list(target: Target) -> None:
    from runtime.checkpoint.listing import list_lines

    store = _store(target)
    typer.echo(f"checkpoints of {target.panel} ({store.kind} store in {store.root}):")
    for line in list_lines(store.checkpoints()):
        typer.echo(f"  {line}")


def _check_turn(target: Target, turn: int | None) -> None:
    """Refuse an unknown checkpoint (exit 2) or none at all (exit 1) before anything."""
    from runtime.checkpoint import find
    from runtime.errors import CheckpointNotFoundError

    try:
        find(_store(target), turn)
    except CheckpointNotFoundError as exc:
        raise fail(f"{target.panel}: {exc}", EXIT_USAGE if exc.number else EXIT_FAILURE) from None


def _rewind(target: Target, turn: int | None) -> None:
    _check_turn(target, turn)
    if target.team is not None and _host_runs(target.team):
        from panels.cli.steer import give, make_verb

        give(target.team, make_verb("rewind", target.panel, turn=turn), wait=WAIT)
        return
    _rewind_here(target, turn)


def _host_runs(team: str) -> bool:
    from panels.cli.teams import running_pid, team_state

    return running_pid(team_state(team)[1]) is not None


def _rewind_here(target: Target, turn: int | None) -> None:
    """No host runs the panel: rewind here, holding the instance's lease."""
    from panels.cli.instances import hold_instance
    from runtime.checkpoint import CheckpointSettings, rewind
    from runtime.store import TurnStore
    from runtime.turn.prompt import text_block
    from runtime.window.rows import NewRow, estimate_tokens

    with hold_instance(target.paths, "rewind", "rewind its files"):
        report = rewind(_store(target), turn, settings=CheckpointSettings())
        note = report.window_note()
        with TurnStore.open(target.paths.turns) as store:
            store.append([NewRow("system", (text_block(note),), estimate_tokens(note))])
    typer.echo(f"rewind: {report.summary()}")
    for line in report.details():
        typer.echo(f"  {line}")
    if not report.ok:
        raise typer.Exit(EXIT_FAILURE)
