"""How `--team` is read: a team's name, its team file, or an instance that `mnemara run` hosts.

A name finds `$MNEMARA_HOME/_teams/NAME/`; when no team of that name ever ran, it finds the
solo host of the instance NAME (`<instance>/host/`, panels/host/solo.py). A team file gives
its own state directory and bus. A name that could leave MNEMARA_HOME (`../x`) is refused.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from pathlib import Path
from typing import TYPE_CHECKING

from panels.cli.errors import EXIT_USAGE, fail

if TYPE_CHECKING:
    import sqlite3

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


def is_team_file(team: str) -> bool:
    return team.endswith(".toml") or Path(team).is_file()


def check_team_name(team: str) -> str:
    """`team`, if it is a usable team name; else exit 2 saying what a name may hold."""
    if not _NAME.fullmatch(team) or ".." in team:
        raise fail(
            f"invalid team name {team!r}: use 1-64 letters, digits, '.', '-' or '_', starting "
            "with a letter or digit, or give the team file",
            EXIT_USAGE,
        )
    return team


def team_state(team: str) -> tuple[str, Path]:
    """(team name, state directory) for a team name, a team file, or a solo instance."""
    from panels.host.solo import solo_state_dir
    from runtime.instance.home import mnemara_home

    if is_team_file(team):
        from panels.team import load_team

        spec = load_team(team)
        return spec.name, spec.state_dir
    check_team_name(team)
    teams = mnemara_home() / "_teams" / team
    if not (teams / "host.sqlite").is_file():
        solo = solo_state_dir(team)
        if solo is not None and (solo / "host.sqlite").is_file():
            return team, solo
    return team, teams


def unknown_panel(panel: str, names: Collection[str], team: str) -> str:
    """What every command says of a panel the team does not have: the panels it has. Pure."""
    have = f"its panels: {', '.join(names)}" if names else "it has no panels recorded yet"
    return f"no panel {panel!r} in team {team!r}; {have}"


def check_panel(panel: str, names: Collection[str], team: str) -> None:
    """Exit 2 (a usage error, as panels/cli/errors.py documents) naming the team's panels
    when `panel` is not one of `names`; `team` as `--team` gave it."""
    if panel not in names:
        raise fail(unknown_panel(panel, names, team_state(team)[0]), EXIT_USAGE)


def open_host_db(team: str) -> sqlite3.Connection:
    """The team's host.sqlite; NoHostError when its host never ran."""
    from panels.errors import HostDbError, NoHostError
    from panels.hostdb import connect

    name, state = team_state(team)
    try:
        return connect(state / "host.sqlite", create=False)
    except HostDbError:
        if (state / "host.sqlite").is_file():
            raise  # there, but unusable: say so, not "never started"
        raise NoHostError(
            f"team {name!r} has no host state under {state}; start it with "
            "`mnemara up TEAM.toml` (or `mnemara run -i NAME` for an instance), "
            "or check the name with `mnemara list`",
            team=name,
        ) from None


def running_pid(state: Path) -> int | None:
    """The pid of the team's running host, if one runs."""
    from panels.host.process import read_pid
    from panels.procfs import pid_alive

    pid = read_pid(state / "host.pid")
    return pid if pid is not None and pid_alive(pid) else None


def bus_location(team: str) -> str:
    """The bus of a team (a file path or a URL): its team file's, the one its host recorded,
    or the default file."""
    from panels.hostdb import connect, get_meta

    if is_team_file(team):
        from panels.team import load_team

        return load_team(team).bus
    _, state = team_state(team)
    if (state / "host.sqlite").is_file():
        conn = connect(state / "host.sqlite", create=False)
        try:
            meta = get_meta(conn)
        finally:
            conn.close()
        from panels.team import recorded_bus

        if recorded := recorded_bus(meta):
            return recorded
    return str(state / "bus.sqlite")
