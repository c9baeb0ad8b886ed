"""Getting a panel's instance ready: create it on first start, apply the team's overrides.

An instance the team names and that does not exist yet is created (config with the team's
role doc and model, an empty turn store). An existing instance keeps its files; the team's
model, role doc, policy entries and sentinel and budget overrides apply to this host's run
only, in memory, and are never written into the instance's config.json. The guard's settings
are the instance's own (its `runtime_sentinel` switch, thresholds, shadow mode and budgets)
with the keys the team file sets for the panel replacing theirs.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from panels.host.control.asker import HostAsker
from panels.team import PanelSpec, TeamSpec, merge_limits
from runtime.guard.guard import GuardSettings
from runtime.guard.policy import build_policy
from runtime.instance.config import (
    DEFAULT_MODEL,
    InstanceConfig,
    ToolPolicy,
    load_config,
    save_config,
)
from runtime.instance.home import InstancePaths
from runtime.instance.roledoc import RoleDocSource
from runtime.store import TurnStore
from runtime.turn.driver import Approver

if TYPE_CHECKING:
    from panels.host.turns.panel import PanelRunner
    from runtime.policy.context import Containment
    from runtime.turn.session import Session


@dataclass(frozen=True)
class Prepared:
    paths: InstancePaths
    config: InstanceConfig
    approver: Approver
    role: Path | None
    created: bool
    guard_settings: GuardSettings

    def apply(self, session: Session) -> None:
        """Put the team's overrides on an open session (not saved)."""
        session.config = self.config
        if self.role is not None:
            session.role = RoleDocSource(self.role)


def ensure_instance(spec: PanelSpec, home: Path | None = None) -> tuple[InstancePaths, bool]:
    """The panel's instance, created when missing; returns (paths, created)."""
    paths = InstancePaths.for_name(spec.instance, home)
    if paths.config.is_file():
        return paths, False
    paths.root.mkdir(parents=True, exist_ok=True)
    config = InstanceConfig(
        role_doc_path=str(spec.role) if spec.role else "",
        model=spec.model or DEFAULT_MODEL,
        display_name=spec.name,
    )
    save_config(paths.config, config)
    TurnStore.open(paths.turns).close()
    return paths, True


def merge_policy(
    base: tuple[ToolPolicy, ...], overrides: tuple[ToolPolicy, ...]
) -> tuple[ToolPolicy, ...]:
    """The instance's tool entries with the team's entries replacing those of the same tool."""
    replaced = {o.tool for o in overrides}
    return (*(p for p in base if p.tool not in replaced), *overrides)


def overridden(config: InstanceConfig, spec: PanelSpec) -> InstanceConfig:
    changes: dict[str, object] = {}
    if spec.model:
        changes["model"] = spec.model
    if spec.role is not None:
        changes["role_doc_path"] = str(spec.role)
    if spec.policy:
        changes["allowed_tools"] = merge_policy(config.allowed_tools, spec.policy)
    return config.model_copy(update=changes) if changes else config


def prepare_panel(
    spec: PanelSpec,
    team: TeamSpec,
    runner: PanelRunner,
    *,
    home: Path | None = None,
    containment: Containment | None = None,
) -> Prepared:
    """Blocking (files): run it in a worker thread. `containment` is what the panel's sandbox
    contains when its tools run confined (None: unconfined)."""
    paths, created = ensure_instance(spec, home)
    own = load_config(paths.config)
    limits, sentinel = merge_limits(own.limits, own.runtime_sentinel, spec, team=team)
    config = overridden(own, spec).model_copy(
        update={"limits": limits, "runtime_sentinel": sentinel}
    )
    team.workdir.mkdir(parents=True, exist_ok=True)
    asker = HostAsker(
        spec.name, runner.host.approvals, runner.host.log,
        timeout=team.approval_timeout, on_state=runner.signal,
    )  # fmt: skip
    # The team's own databases (a foreign bus included) and its team file, whose policy
    # entries widen permissions on the next `up`, are never written by a tool.
    team_files = tuple(p for p in (team.bus_file, team.hostdb_path) if p is not None)
    approver = build_policy(
        paths,
        config,
        cwd=team.workdir,
        asker=asker,
        roots=(team.workdir,),  # where the team's panels work: a root for the file tools
        team_files=team_files,
        team_file=team.source,
        team_tools=frozenset(p.tool for p in spec.policy),
        containment=containment,
    )
    return Prepared(paths, config, approver, spec.role, created, GuardSettings(limits, sentinel))
