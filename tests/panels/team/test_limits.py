"""Per-panel budget and sentinel overrides: partial in the file, merged with the instance."""

from __future__ import annotations

from pathlib import Path

import pytest

from panels.team import PanelSpec, TeamFileError, TeamSpec, merge_limits, parse_team
from runtime.instance.guard_settings import BudgetSettings, LimitsConfig, SentinelSettings

HEAD = '[team]\nname = "t"\n[[panels]]\nname = "lead"\n[[panels]]\nname = "eng"\n'


def team_with(tmp_path: Path, tables: str) -> TeamSpec:
    return parse_team(HEAD + tables, source=tmp_path / "t.toml", home=tmp_path)


def test_a_panel_keeps_only_the_keys_it_sets(tmp_path: Path) -> None:
    team = team_with(
        tmp_path,
        "runtime_sentinel = true\n"
        "[panels.sentinel]\nwindow = 2\nmutating_tools = ['Write']\n"
        "[panels.budget]\nmax_turn_usd = 0.5\n",
    )
    lead, eng = team.panels
    assert (lead.sentinel_overrides, lead.budget_overrides, lead.runtime_sentinel) == ({}, {}, None)
    # window = 2 alone is below the default repeat_threshold (3): fine until merged.
    assert eng.sentinel_overrides == {"window": 2, "mutating_tools": ("Write",)}
    assert eng.budget_overrides == {"max_turn_usd": 0.5} and eng.runtime_sentinel is True


@pytest.mark.parametrize(
    ("tables", "line", "field", "words"),
    [
        ("[panels.sentinel]\nwindw = 3\n", 8, "panels[1].sentinel.windw",
         "unknown key 'windw' in [panels.sentinel]; did you mean 'window'?"),
        ("[panels.sentinel]\nwindow = 1\n", 8, "panels[1].sentinel.window", "greater than"),
        ("[panels.sentinel]\nshadow = 'yes please'\n", 8, "panels[1].sentinel.shadow", "true or"),
        ("[panels.budget]\nmax_usd = 1\n", 8, "panels[1].budget.max_usd",
         "unknown key 'max_usd' in [panels.budget]; did you mean"),
        ("[panels.budget]\nmax_turn_usd = 'lots'\n", 8, "panels[1].budget.max_turn_usd", "number"),
        ("runtime_sentinel = 'sometimes'\n", 7, "panels[1].runtime_sentinel", "true or false"),
    ],
)  # fmt: skip
def test_override_tables_are_checked_key_by_key(
    tmp_path: Path, tables: str, line: int, field: str, words: str
) -> None:
    with pytest.raises(TeamFileError) as caught:
        team_with(tmp_path, tables)
    assert (caught.value.line, caught.value.field) == (line, field)
    assert words in str(caught.value)


def test_without_overrides_the_instance_settings_stand(tmp_path: Path) -> None:
    own = LimitsConfig(sentinel=SentinelSettings(window=9), budget=BudgetSettings(max_turn_usd=1))
    lead = team_with(tmp_path, "").panels[0]
    assert merge_limits(own, True, lead) == (own, True)
    assert merge_limits(own, False, lead)[0] is own


@pytest.mark.parametrize(("instance", "panel", "on"), [
    (False, "true", True), (True, "false", False), (True, None, True), (False, None, False),
])  # fmt: skip
def test_runtime_sentinel_switches_the_instance_setting(
    tmp_path: Path, instance: bool, panel: str | None, on: bool
) -> None:
    line = f"runtime_sentinel = {panel}\n" if panel else ""
    eng = team_with(tmp_path, line).panels[1]
    assert merge_limits(LimitsConfig(), instance, eng)[1] is on


def test_overrides_replace_only_their_keys(tmp_path: Path) -> None:
    own = LimitsConfig(
        sentinel=SentinelSettings(window=10, repeat_threshold=2, failure_threshold=0),
        budget=BudgetSettings(max_session_usd=3.0, max_turn_requests=40),
    )
    eng = team_with(
        tmp_path, "[panels.sentinel]\nwindow = 2\n[panels.budget]\nmax_turn_requests = 10\n"
    ).panels[1]
    limits, on = merge_limits(own, False, eng)
    assert limits.sentinel == SentinelSettings(window=2, repeat_threshold=2, failure_threshold=0)
    assert limits.budget == BudgetSettings(max_session_usd=3.0, max_turn_requests=10)
    assert on is False
    assert own.sentinel.window == 10  # the instance's settings are not changed in place


def test_an_invalid_merge_names_the_team_file_and_the_table(tmp_path: Path) -> None:
    team = team_with(tmp_path, "[panels.sentinel]\nwindow = 2\n")
    own = LimitsConfig()  # repeat_threshold 3: more than the panel's window of 2
    with pytest.raises(TeamFileError) as caught:
        merge_limits(own, True, team.panels[1], team=team)
    error = caught.value
    assert (error.path, error.line) == (tmp_path / "t.toml", None)
    assert error.field == "panels[1].sentinel"
    assert "repeat_threshold (3) cannot exceed window (2)" in str(error)
    assert "panel 'eng' sets window in [panels.sentinel], instance 'eng' the rest" in str(error)


def test_an_invalid_merge_without_a_team_names_the_panel(tmp_path: Path) -> None:
    spec = team_with(tmp_path, "[panels.sentinel]\nalternation_cycles = 1\n").panels[1]
    with pytest.raises(TeamFileError, match="alternation_cycles must be 0") as caught:
        merge_limits(LimitsConfig(), True, spec)
    assert caught.value.path is None and caught.value.field == "sentinel"
    assert str(caught.value).startswith("team file: field 'sentinel':")


def test_overrides_built_in_code_are_checked_when_merged(tmp_path: Path) -> None:
    spec = team_with(tmp_path, "").panels[0]
    bad = PanelSpec(**{**vars(spec), "budget_overrides": {"max_turn_usd": -1, "colour": 1}})
    with pytest.raises(TeamFileError) as caught:
        merge_limits(LimitsConfig(), False, bad)
    assert [p.field for p in caught.value.problems] == ["budget.max_turn_usd", "budget.colour"]
