"""Applying a panel's team-file overrides to its instance's limits and sentinel switch.

The team file keeps only the `[panels.budget]` and `[panels.sentinel]` keys it sets (each
checked alone when the file is read); here they replace the instance's values of those keys,
and the merged settings are validated whole, since a rule across fields (`repeat_threshold`
no larger than `window`) may involve one value from each side. Pure: the host calls it with
the instance's config once loaded.
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from panels.team.errors import Problem, TeamFileError
from panels.team.load import PanelSpec, TeamSpec
from panels.team.locate import dotted
from runtime.instance.guard_settings import BudgetSettings, LimitsConfig, SentinelSettings

M = TypeVar("M", bound=BaseModel)


def merge_limits(
    instance_limits: LimitsConfig,
    instance_sentinel_on: bool,
    spec: PanelSpec,
    *,
    team: TeamSpec | None = None,
) -> tuple[LimitsConfig, bool]:
    """The panel's limits and whether its sentinel runs: the instance's own settings with the
    keys the team file set for this panel replacing theirs, and `runtime_sentinel` (when set)
    replacing the instance's switch.

    Raises `TeamFileError` (naming `team`'s file and the panel's table when given) if the
    merged settings are invalid. Without overrides the instance's limits come back as they are.
    """
    sentinel_on = instance_sentinel_on if spec.runtime_sentinel is None else spec.runtime_sentinel
    if not spec.sentinel_overrides and not spec.budget_overrides:
        return instance_limits, sentinel_on
    problems: list[Problem] = []
    try:
        sentinel = _merged(SentinelSettings, instance_limits.sentinel, spec.sentinel_overrides)
    except ValidationError as exc:
        problems += _problems(exc, "sentinel", spec, team)
    try:
        budget = _merged(BudgetSettings, instance_limits.budget, spec.budget_overrides)
    except ValidationError as exc:
        problems += _problems(exc, "budget", spec, team)
    if problems:
        raise TeamFileError(problems)
    return LimitsConfig(sentinel=sentinel, budget=budget), sentinel_on


def _merged(model: type[M], own: M, overrides: dict[str, Any]) -> M:
    """`own` with `overrides` replacing its values, validated whole (cross-field rules too)."""
    if not overrides:
        return own
    return model.model_validate({**own.model_dump(), **overrides})


def _problems(
    exc: ValidationError, table: str, spec: PanelSpec, team: TeamSpec | None
) -> list[Problem]:
    names = [p.name for p in team.panels] if team else []
    where = f"panels[{names.index(spec.name)}].{table}" if spec.name in names else table
    overrides = spec.sentinel_overrides if table == "sentinel" else spec.budget_overrides
    problems = []
    for error in exc.errors():
        message = str(error["msg"]).removeprefix("Value error, ")
        loc = tuple(error["loc"])
        problems.append(
            Problem(
                team.source if team else None,
                None,  # the spec keeps no lines; the field names the table
                f"{where}.{dotted(loc)}" if loc else where,
                f"{message}: panel {spec.name!r} sets {', '.join(sorted(overrides))} in "
                f"[panels.{table}], instance {spec.instance!r} the rest; change either",
            )
        )
    return problems
