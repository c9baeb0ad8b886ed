"""Which sandbox a team's panels get on this machine, and the one line that says so.

Used by the host when it builds the panels' CLI drivers, and by `rehearse` and
`run --rehearsal`, which build their own: the same rules and the same words everywhere.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from panels.errors import HostError
from panels.team import PanelSpec, TeamSpec
from panels.unconfined import UNCONFINED
from runtime.errors import ConfigError
from runtime.instance.config import load_config
from runtime.instance.home import InstancePaths, mnemara_home
from runtime.sandbox import Sandbox, SandboxSettings, SandboxUnavailable, probe, sandbox_for

SHARED = "commands share the CLI's namespaces"  # a sandbox that cannot nest (isolate.py)


def team_sandbox(team: TeamSpec, home: Path | None = None) -> tuple[Sandbox | None, str]:
    """(the sandbox or None, what confines the tools); a note that starts with UNCONFINED is
    to be shown to the operator. Raises HostError when the team requires a sandbox that
    cannot be built here."""
    settings = guarded_settings(team, home)
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


def guarded_settings(team: TeamSpec, home: Path | None = None) -> SandboxSettings:
    """The team's sandbox settings with every file the host reads to decide what a panel may
    do kept read-only inside: each panel's role doc (its front matter narrows the panel's
    lane; a panel that rewrote a peer's would steer the peer), the team file's or, for a
    panel the team file gives no role, its instance's own, and the rehearsal script."""
    files = [role for spec in team.panels if (role := _role_doc(spec, home)) is not None]
    if team.rehearsal is not None:
        files.append(team.rehearsal)
    known = team.sandbox.read_only
    return dataclasses.replace(
        team.sandbox, read_only=(*known, *(f for f in files if f not in known))
    )


def _role_doc(spec: PanelSpec, home: Path | None) -> Path | None:
    """The role doc the panel's turns will read: the team file's, else the one its existing
    instance names (a new instance gets none); a config that cannot be read is reported when
    the panel is prepared, not here."""
    if spec.role is not None:
        return spec.role
    paths = InstancePaths.for_name(spec.instance, home)
    try:
        named = load_config(paths.config).role_doc_path if paths.config.is_file() else ""
    except ConfigError:
        return None
    return Path(named) if named else None
