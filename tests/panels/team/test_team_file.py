"""The team file: validation with file, line and field in errors; paths and defaults."""

from __future__ import annotations

from pathlib import Path

import pytest

from panels.team import TeamFileError, load_team, parse_team

GOOD = """
[team]
name = "crew"
bus = "shared/peer.db"
max_concurrent_turns = 3
rehearsal = "script.toml"

[team.budget]
max_tokens = 1000000
max_usd = 5.0

[[panels]]
name = "producer"
role = "roles/producer.md"
model = "claude-sonnet-4-5"
kind = "producer"
listens_to = ["engineer"]

[[panels]]
name = "engineer"
instance = "eng-1"
paused = true
[panels.batch]
enabled = false
[panels.budget]
max_session_usd = 1.5
[[panels.policy]]
tool = "Bash"
mode = "allow"
"""


def test_a_good_file_resolves_paths_from_its_directory(tmp_path: Path) -> None:
    source = tmp_path / "crew.toml"
    team = parse_team(GOOD, source=source, home=tmp_path / "home")
    assert team.name == "crew"
    assert team.bus_path == tmp_path / "shared" / "peer.db" and not team.bus_is_default
    assert team.rehearsal == tmp_path / "script.toml"
    assert team.workdir == tmp_path
    assert team.state_dir == tmp_path / "home" / "_teams" / "crew"
    assert team.hostdb_path.name == "host.sqlite"
    assert team.budget.max_usd == 5.0 and team.max_concurrent_turns == 3
    producer, engineer = team.panels
    assert producer.role == tmp_path / "roles" / "producer.md"
    assert producer.instance == "producer" and producer.listens_to == ("engineer",)
    assert engineer.instance == "eng-1" and engineer.paused and engineer.listens_to is None
    assert not engineer.batch.enabled and engineer.budget.max_session_usd == 1.5
    assert engineer.policy[0].tool == "Bash" and engineer.policy[0].mode == "allow"


def test_the_default_bus_lives_in_the_team_state_directory(tmp_path: Path) -> None:
    team = parse_team(
        '[team]\nname = "t"\n[[panels]]\nname = "a"\n', source=tmp_path / "t.toml", home=tmp_path
    )
    assert team.bus_path == tmp_path / "_teams" / "t" / "bus.sqlite" and team.bus_is_default


@pytest.mark.parametrize(
    ("text", "line", "field", "words"),
    [
        (GOOD.replace("max_session_usd = 1.5", "max_session_usd = -1"), 26,
         "panels[1].budget.max_session_usd", "greater than 0"),
        (GOOD.replace('kind = "producer"', 'kind = "producer"\ncolour = "red"'), 17,
         "panels[0].colour", "Extra inputs"),
        (GOOD.replace('name = "engineer"', 'name = "operator"'), 20, "panels[1].name", "reserved"),
        (GOOD.replace('name = "engineer"', 'name = "../x"'), 20, "panels[1].name", "pattern"),
        (GOOD.replace("max_concurrent_turns = 3", "max_concurrent_turns = 0"), 5,
         "team.max_concurrent_turns", "greater than or equal"),
        (GOOD.replace('mode = "allow"', 'mode = "maybe"'), 29, "panels[1].policy[0].mode", "allow"),
    ],
)  # fmt: skip
def test_errors_name_file_line_and_field(
    tmp_path: Path, text: str, line: int, field: str, words: str
) -> None:
    source = tmp_path / "crew.toml"
    with pytest.raises(TeamFileError) as caught:
        parse_team(text, source=source)
    error = caught.value
    assert (error.path, error.line, error.field) == (source, line, field)
    assert str(error).startswith(f"{source}:{line}: field '{field}':")
    assert words in str(error)


def test_duplicate_panel_names_are_refused(tmp_path: Path) -> None:
    text = '[team]\nname = "t"\n[[panels]]\nname = "a"\n[[panels]]\nname = "a"\n'
    with pytest.raises(TeamFileError, match="used twice"):
        parse_team(text, source=tmp_path / "t.toml")


def test_broken_toml_names_the_line(tmp_path: Path) -> None:
    with pytest.raises(TeamFileError) as caught:
        parse_team('[team]\nname = "t"\n\n[[panels]\n', source=tmp_path / "t.toml")
    assert caught.value.line == 4 and "not valid TOML" in str(caught.value)


def test_a_missing_file_says_so(tmp_path: Path) -> None:
    with pytest.raises(TeamFileError, match="no such file"):
        load_team(tmp_path / "nope.toml")


@pytest.mark.parametrize("example", sorted(Path("examples/teams").glob("*/team.toml")))
def test_the_examples_load(example: Path, tmp_path: Path) -> None:
    team = load_team(example, home=tmp_path)
    assert team.panels
    for panel in team.panels:
        assert panel.role is not None and panel.role.is_file(), panel.role
    assert team.rehearsal is not None and team.rehearsal.is_file()
