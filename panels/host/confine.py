"""Which sandbox a team's panels get on this machine, and the one line that says so.

Used by the host when it builds the panels' CLI drivers, and by `rehearse` and
`run --rehearsal`, which build their own: the same rules and the same words everywhere.
"""

from __future__ import annotations

from pathlib import Path

from panels.errors import HostError
from panels.team import TeamSpec
from runtime.home import mnemara_home
from runtime.sandbox import Sandbox, SandboxUnavailable, probe, sandbox_for

UNCONFINED = "tools run unconfined"


def team_sandbox(team: TeamSpec, home: Path | None = None) -> tuple[Sandbox | None, str]:
    """(the sandbox or None, what confines the tools); a note that starts with UNCONFINED is
    to be shown to the operator. Raises HostError when the team requires a sandbox that
    cannot be built here."""
    settings = team.sandbox
    try:
        found = sandbox_for(settings, user_home=Path.home(), state_home=home or mnemara_home())
    except SandboxUnavailable as exc:
        where = f" in {team.source}" if team.source else ""
        fix = f'set sandbox = "auto" under [team]{where}' if team.source else "--sandbox auto"
        raise HostError(f"{exc}; or {fix} to run unconfined", team=team.name) from None
    if found is not None:
        return found, f"tools run in the sandbox ({settings.describe_network()})"
    if settings.mode == "off":
        return None, f"{UNCONFINED}: the sandbox is turned off"
    return None, f"{UNCONFINED} (with your full rights): {probe().reason}"
