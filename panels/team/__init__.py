"""The team file: which panels a host runs, with their roles, models, budgets and bus.

`load_team(path)` -> `TeamSpec`; errors are one `TeamFileError` (a `ConfigError`) listing
every problem with its file, line and field. `merge_limits` applies a panel's budget and
sentinel overrides to its instance's own. Modules: model (the pydantic shape), checks (what
needs the whole file or the disk), load (paths and the spec), limits (the merge), locate
(line numbers for errors), errors.
"""

from panels.team.errors import Problem, TeamFileError
from panels.team.limits import merge_limits
from panels.team.load import (
    PanelSpec,
    TeamSpec,
    build_spec,
    load_team,
    parse_team,
    recorded_bus,
)
from panels.team.model import (
    KNOWN_KINDS,
    BatchSettings,
    BudgetOverrides,
    PanelModel,
    SendLimits,
    SentinelOverrides,
    TeamBudget,
    TeamModel,
    TeamSection,
)

__all__ = [
    "KNOWN_KINDS",
    "BatchSettings",
    "BudgetOverrides",
    "PanelModel",
    "PanelSpec",
    "Problem",
    "SendLimits",
    "SentinelOverrides",
    "TeamBudget",
    "TeamFileError",
    "TeamModel",
    "TeamSection",
    "TeamSpec",
    "build_spec",
    "load_team",
    "merge_limits",
    "parse_team",
    "recorded_bus",
]
