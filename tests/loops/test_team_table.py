"""`[team.loops]` in a team file: the keys given override the rules' defaults; a bad value or
an unknown key is an error naming the file, the line and the field."""

from __future__ import annotations

from pathlib import Path

import pytest

from panels.host import Host
from panels.host.loops.rules import LoopSettings
from panels.team import TeamFileError, parse_team

TEAM = """[team]
name = "crew"

[team.loops]
ping_pong_exchanges = 8
rate_window = 60.0

[[panels]]
name = "a"
"""


def test_the_keys_given_override_the_defaults_and_the_rest_stay(tmp_path: Path) -> None:
    team = parse_team(TEAM, source=tmp_path / "team.toml", home=tmp_path)
    settings = Host(team, home=tmp_path).loop_settings
    assert (settings.ping_pong_exchanges, settings.rate_window) == (8, 60.0)
    defaults = LoopSettings()
    assert (settings.ack_chain, settings.rate_messages, settings.enabled) == (
        defaults.ack_chain, defaults.rate_messages, True)  # fmt: skip


def test_a_team_without_the_table_gets_the_defaults(tmp_path: Path) -> None:
    text = '[team]\nname = "crew"\n[[panels]]\nname = "a"\n'
    team = parse_team(text, source=tmp_path / "team.toml", home=tmp_path)
    assert Host(team, home=tmp_path).loop_settings == LoopSettings()


@pytest.mark.parametrize(
    ("old", "new", "field", "words"),
    [
        ("ping_pong_exchanges = 8", "ping_pong_exchanges = 1", "team.loops.ping_pong_exchanges",
         "greater than or equal to 2"),
        ("rate_window = 60.0", "rate_window = 0", "team.loops.rate_window", "greater than 0"),
        ("rate_window = 60.0", "rate_windows = 60.0", "team.loops.rate_windows",
         "unknown key 'rate_windows' in [team.loops]; did you mean 'rate_window'?"),
    ],
)  # fmt: skip
def test_a_bad_key_names_the_file_line_and_field(
    tmp_path: Path, old: str, new: str, field: str, words: str
) -> None:
    source = tmp_path / "team.toml"
    with pytest.raises(TeamFileError) as caught:
        parse_team(TEAM.replace(old, new), source=source, home=tmp_path)
    error = caught.value
    line = TEAM.replace(old, new).splitlines().index(new) + 1
    assert (error.path, error.line, error.field) == (source, line, field)
    assert words in str(error) and str(error).startswith(f"{source}:{line}: field '{field}':")


def test_each_rule_s_time_window_and_the_halt_ratio_can_be_set(tmp_path: Path) -> None:
    text = TEAM.replace(
        "rate_window = 60.0",
        "ping_pong_window = 120.0\nack_window = 90.0\ncascade_window = 45.0\n"
        "rate_halt_ratio = 2.0\nnovel_units = 5",
    )
    team = parse_team(text, source=tmp_path / "team.toml", home=tmp_path)
    settings = Host(team, home=tmp_path).loop_settings
    assert (settings.ping_pong_window, settings.ack_window, settings.cascade_window) == (
        120.0, 90.0, 45.0)  # fmt: skip
    assert (settings.rate_halt, settings.novel_units) == (60, 5)
