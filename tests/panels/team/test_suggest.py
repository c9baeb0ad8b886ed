"""An unknown key in a team file names the nearest valid key of its table, or lists them."""

from __future__ import annotations

from pathlib import Path

import pytest

from panels.team import TeamFileError, parse_team
from panels.team.model import PanelModel, TeamModel
from panels.team.suggest import model_at, table_keys, table_name, unknown_key


@pytest.mark.parametrize(
    ("loc", "said"),
    [
        (("team", "bugdet"), "unknown key 'bugdet' in [team]; did you mean 'budget'?"),
        (("teams",), "unknown key 'teams' in the file's top level; did you mean 'team'?"),
        (("team", "budget", "max_tokns"), "in [team.budget]; did you mean 'max_tokens'?"),
        (("team", "external", "cc", "writes_too"), "[team.external.cc]; did you mean 'writes_to'?"),
        (("panels", 2, "kynd"), "in [[panels]]; did you mean 'kind'?"),
        (("panels", 0, "budget", "max_sesion_usd"), "did you mean 'max_session_usd'?"),
        (("panels", 0, "policy", 1, "mod"), "in [[panels.policy]]; did you mean 'mode'?"),
        (("panels", 0, "batch", "zzz"), "its keys are enabled, max_messages, max_tokens"),
        (("team", "network", "x"), "unknown key 'x' in [team.network]; remove it"),
    ],
)  # fmt: skip
def test_the_message_names_the_table_and_the_nearest_key(
    loc: tuple[str | int, ...], said: str
) -> None:
    assert said in unknown_key(TeamModel, loc)


def test_the_valid_keys_are_the_models_fields() -> None:
    assert model_at(TeamModel, ("panels", 0)) is PanelModel
    assert model_at(TeamModel, ("team", "nosuch")) is None
    assert table_keys(PanelModel)[:2] == ["name", "instance"]
    assert table_name(()) == "the file's top level"


def test_a_team_file_with_a_typo_says_what_was_meant(tmp_path: Path) -> None:
    text = '[team]\nname = "t"\nbugdet = 3\n[[panels]]\nname = "a"\n'
    with pytest.raises(TeamFileError) as caught:
        parse_team(text, source=tmp_path / "t.toml", home=tmp_path)
    assert str(caught.value) == (
        f"{tmp_path / 't.toml'}:3: field 'team.bugdet': unknown key 'bugdet' in [team]; "
        "did you mean 'budget'?"
    )
