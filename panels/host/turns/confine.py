"""Which sandbox a team's panels get on this machine, and the one line that says so.

Used by the host when it builds the panels' CLI drivers, and by `rehearse` and
`run --rehearsal`, which build their own: the same rules and the same words everywhere.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from panels.errors import HostError
from panels.team import TeamSpec
from panels.unconfined import UNCONFINED
from runtime.instance.home import mnemara_home
from runtime.sandbox import Sandbox, SandboxSettings, SandboxUnavailable, probe, sandbox_for

SHARED = "commands share the CLI's namespaces"  # a sandbox that cannot nest (isolate.py)


def team_sandbox(team: TeamSpec, home: Path | None = None) -> tuple[Sandbox | None, str]:
    """(the sandbox or None, what confines the tools); a note that starts with UNCONFINED is
    to be shown to the operator. Raises HostError when the team requires a sandbox that
    cannot be built here."""
    settings = guarded_settings(team)
    try:
        found = sandbox_for(settings, user_home=Path.home(), state_home=home or mnemara_home())
    except SandboxUnavailable as exc:
        where = f" in {team.source}" if team.source else ""
        fix = f'set sandbox = "auto" under [team]{where}' if team.source else "--sandbox auto"
        raise HostError(f"{exc}; or {fix} to run unconfined", team=team.name) from None
    if found is not None and not found.isolate:
        why = probe().nested_reason
        return found, (
            f"tools run in the sandbox ({settings.describe_network()}), but {SHARED}, as a "
            f"nested sandbox fails here ({why}): a command could reach the CLI's connection "
            "to the model"
        )
    if found is not None:
        return found, f"tools run in the sandbox ({settings.describe_network()})"
    if settings.mode == "off":
        return None, f"{UNCONFINED}: the sandbox is turned off"
    return None, f"{UNCONFINED} (with your full rights): {probe().reason}"


def guarded_settings(team: TeamSpec) -> SandboxSettings:
    """The team's sandbox settings with every file the host reads to decide what a panel may
    do kept read-only inside: each panel's role doc (its front matter narrows the panel's
    lane; a panel that rewrote a peer's would steer the peer) and the rehearsal script."""
    files = [spec.role for spec in team.panels if spec.role is not None]
    if team.rehearsal is not None:
        files.append(team.rehearsal)
    known = team.sandbox.read_only
    return dataclasses.replace(
        team.sandbox, read_only=(*known, *(f for f in files if f not in known))
    )
