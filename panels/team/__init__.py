"""The team file: which panels a host runs, with their roles, models, budgets and bus.

`load_team(path)` -> `TeamSpec`; errors are `TeamFileError` (a `ConfigError`) naming the
file, line and field. Modules: model (the pydantic shape), load (paths and the spec),
locate (line numbers for errors).
"""

from panels.team.load import PanelSpec, TeamFileError, TeamSpec, build_spec, load_team, parse_team
from panels.team.model import BatchSettings, PanelModel, TeamBudget, TeamModel, TeamSection

__all__ = [
    "BatchSettings",
    "PanelModel",
    "PanelSpec",
    "TeamBudget",
    "TeamFileError",
    "TeamModel",
    "TeamSection",
    "TeamSpec",
    "build_spec",
    "load_team",
    "parse_team",
]
