"""The team file: every problem at once with file, line and field; paths and defaults."""

from __future__ import annotations

from pathlib import Path

import pytest

from panels.team import Problem, TeamFileError, load_team, parse_team, recorded_bus
from runtime.errors import ConfigError

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


@pytest.fixture
def crew(tmp_path: Path) -> Path:
    """A directory holding GOOD's role doc and rehearsal script; returns its team file path."""
    (tmp_path / "roles").mkdir()
    (tmp_path / "roles" / "producer.md").write_text("# producer\n")
    (tmp_path / "script.toml").write_text("")
    return tmp_path / "crew.toml"


def test_a_good_file_resolves_paths_from_its_directory(tmp_path: Path, crew: Path) -> None:
    source = crew
    team = parse_team(GOOD, source=source, home=tmp_path / "home")
    assert team.name == "crew"
    assert Path(team.bus) == tmp_path / "shared" / "peer.db" and not team.bus_is_default
    assert team.rehearsal == tmp_path / "script.toml"
    assert team.workdir == tmp_path
    assert team.state_dir == tmp_path / "home" / "_teams" / "crew"
    assert team.hostdb_path.name == "host.sqlite"
    assert team.budget.max_usd == 5.0 and team.max_concurrent_turns == 3
    producer, engineer = team.panels
    assert producer.role == tmp_path / "roles" / "producer.md"
    assert producer.instance == "producer" and producer.listens_to == ("engineer",)
    assert engineer.instance == "eng-1" and engineer.paused and engineer.listens_to is None
    assert not engineer.batch.enabled and engineer.budget_overrides == {"max_session_usd": 1.5}
    assert engineer.sentinel_overrides == {} and engineer.runtime_sentinel is None
    assert engineer.policy[0].tool == "Bash" and engineer.policy[0].mode == "allow"


@pytest.mark.parametrize(
    ("bus", "expected"),
    [
        ("sqlite:///shared/peer.db", "{dir}/shared/peer.db"),
        ("sqlite:////srv/peer.db", "/srv/peer.db"),
        ("postgresql://mnemara:secret@db.internal:5432/team", None),
        ("postgres://db.internal/team", None),
    ],
)
def test_the_bus_may_be_a_url(tmp_path: Path, crew: Path, bus: str, expected: str | None) -> None:
    text = GOOD.replace('bus = "shared/peer.db"', f'bus = "{bus}"')
    team = parse_team(text, source=crew, home=tmp_path / "home")
    if expected is None:  # PostgreSQL: the URL as given, no file to hide from the panels
        assert team.bus == bus and team.bus_file is None and not team.sandbox.masked
    else:
        assert team.bus == expected.format(dir=tmp_path) == str(team.bus_file)
        assert team.sandbox.masked and str(team.sandbox.masked[0]) == team.bus


def test_the_default_bus_lives_in_the_team_state_directory(tmp_path: Path) -> None:
    team = parse_team(
        '[team]\nname = "t"\n[[panels]]\nname = "a"\n', source=tmp_path / "t.toml", home=tmp_path
    )
    assert Path(team.bus) == tmp_path / "_teams" / "t" / "bus.sqlite" and team.bus_is_default


@pytest.mark.parametrize(
    ("text", "line", "field", "words"),
    [
        (GOOD.replace("max_session_usd = 1.5", "max_session_usd = -1"), 26,
         "panels[1].budget.max_session_usd", "greater than 0"),
        (GOOD.replace('kind = "producer"', 'kind = "producer"\ncolour = "red"'), 17,
         "panels[0].colour", "unknown key 'colour' in [[panels]]; its keys are name, instance"),
        (GOOD.replace('name = "engineer"', 'name = "operator"'), 20, "panels[1].name", "reserved"),
        (GOOD.replace('name = "engineer"', 'name = "../x"'), 20, "panels[1].name", "pattern"),
        (GOOD.replace("max_concurrent_turns = 3", "max_concurrent_turns = 0"), 5,
         "team.max_concurrent_turns", "greater than or equal"),
        (GOOD.replace('mode = "allow"', 'mode = "maybe"'), 29, "panels[1].policy[0].mode", "allow"),
        (GOOD.replace('bus = "shared/peer.db"', 'bus = "mysql://db/team"'), 4, "team.bus",
         "unknown kind of bus"),
        (GOOD.replace('bus = "shared/peer.db"', 'bus = "sqlite://peer.db"'), 4, "team.bus",
         "sqlite:///relative/path"),
    ],
)  # fmt: skip
def test_errors_name_file_line_and_field(
    crew: Path, text: str, line: int, field: str, words: str
) -> None:
    source = crew
    with pytest.raises(TeamFileError) as caught:
        parse_team(text, source=source)
    error = caught.value
    assert (error.path, error.line, error.field) == (source, line, field)
    assert str(error).startswith(f"{source}:{line}: field '{field}':")
    assert words in str(error)
    assert len(error.problems) == 1 and "\n" not in str(error)


@pytest.mark.parametrize(
    ("tables", "line", "field", "words"),
    [
        # A batch bigger than one turn may answer: replies past per_turn would be refused.
        ("[[panels]]\nname = \"a\"\n[panels.batch]\nmax_messages = 20\n", 6,
         "panels[0].batch.max_messages",
         "max_messages = 20 is more than a turn may send ([team.sends] per_turn = 10)"),
        ("[team.sends]\nper_turn = 5\n[[panels]]\nname = \"a\"\n[panels.batch]\n"
         "max_messages = 8\n", 8, "panels[0].batch.max_messages",
         "max_messages = 8 is more than a turn may send ([team.sends] per_turn = 5)"),
        # A turn that may send more than the window allows.
        ("[team.sends]\nper_turn = 70\n[[panels]]\nname = \"a\"\n", 3, "team.sends",
         "per_turn = 70 is more than per_window = 60"),
    ],
)  # fmt: skip
def test_limits_that_cannot_work_together_are_refused_with_their_numbers(
    tmp_path: Path, tables: str, line: int, field: str, words: str
) -> None:
    source = tmp_path / "t.toml"
    with pytest.raises(TeamFileError) as caught:
        parse_team(f'[team]\nname = "t"\n{tables}', source=source)
    assert (caught.value.line, caught.value.field) == (line, field), str(caught.value)
    assert words in str(caught.value)


def test_a_smaller_per_turn_bounds_the_default_batch_without_a_word(tmp_path: Path) -> None:
    text = '[team]\nname = "t"\n[team.sends]\nper_turn = 4\n[[panels]]\nname = "a"\n'
    team = parse_team(text, source=tmp_path / "t.toml")
    assert team.sends.per_turn == 4


def test_duplicate_panel_names_are_refused_at_the_second_use(tmp_path: Path) -> None:
    text = '[team]\nname = "t"\n[[panels]]\nname = "a"\n[[panels]]\nname = "a"\n'
    with pytest.raises(TeamFileError, match="already used by the panel on line 4") as caught:
        parse_team(text, source=tmp_path / "t.toml")
    assert (caught.value.line, caught.value.field) == (6, "panels[1].name")
    assert "{" not in str(caught.value)  # the parsed file is never dumped into the message


def test_broken_toml_names_the_line(tmp_path: Path) -> None:
    with pytest.raises(TeamFileError) as caught:
        parse_team('[team]\nname = "t"\n\n[[panels]\n', source=tmp_path / "t.toml")
    assert caught.value.line == 4 and "not valid TOML" in str(caught.value)
    assert len(caught.value.problems) == 1


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


MANY = """\
[team]
name = "crew"
rehearsal = "missing.toml"
max_concurrent_turns = 0

[[panels]]
name = "lead"
role = "roles/lead.md"
listens_to = ["eng", "ghost", "operator", "host"]
colour = { r = 1, g = [1, 2] }

[[panels]]
name = "eng"
kind = "wroker"
role = "roles"
[panels.sentinel]
windw = 3

[[panels]]
name = "lead"
instance = "eng"
"""


def test_every_problem_is_reported_at_once_in_file_order(tmp_path: Path) -> None:
    (tmp_path / "roles").mkdir()
    (tmp_path / "roles" / "lead.md").write_text("# lead\n")
    source = tmp_path / "team.toml"
    with pytest.raises(TeamFileError) as caught:
        parse_team(MANY, source=source)
    error = caught.value
    found = [(p.line, p.field) for p in error.problems]
    assert found == [
        (3, "team.rehearsal"),
        (4, "team.max_concurrent_turns"),
        (9, "panels[0].listens_to[1]"),
        (10, "panels[0].colour"),
        (14, "panels[1].kind"),
        (15, "panels[1].role"),
        (17, "panels[1].sentinel.windw"),
        (20, "panels[2].name"),
        (21, "panels[2].instance"),
    ]
    lines = str(error).splitlines()
    assert lines == [str(p) for p in error.problems]
    assert lines[4] == (
        f"{source}:14: field 'panels[1].kind': unknown kind 'wroker'; "
        "use one of worker, watchdog, producer"
    )
    assert all(p.path == source for p in error.problems)
    assert (error.path, error.line, error.field) == (source, 3, "team.rehearsal")
    assert "no rehearsal script at" in lines[0] and "'ghost' is not a panel" in lines[2]
    assert "is not a file" in lines[5]
    assert "on line 7" in lines[7] and "on line 13" in lines[8]
    assert "{" not in str(error) and "[1, 2]" not in str(error)  # no repr of user tables
    assert isinstance(error, ConfigError)


@pytest.mark.parametrize(
    ("team", "senders", "ok"),
    [
        ("", '["b", "operator", "host"]', True),
        ("", '["b", "ghost"]', False),
        ('bus = "shared/peer.db"', '["b", "ghost"]', True),  # a foreign bus has outsiders
    ],
)
def test_listeners_must_be_panels_unless_the_bus_is_shared(
    tmp_path: Path, team: str, senders: str, ok: bool
) -> None:
    text = (
        f'[team]\nname = "t"\n{team}\n[[panels]]\nname = "a"\nlistens_to = {senders}\n'
        '[[panels]]\nname = "b"\n'
    )
    if ok:
        assert parse_team(text, source=tmp_path / "t.toml").panels[0].listens_to
        return
    with pytest.raises(TeamFileError, match="'ghost' is not a panel of this team") as caught:
        parse_team(text, source=tmp_path / "t.toml")
    assert (caught.value.line, caught.value.field) == (6, "panels[0].listens_to[1]")


def test_role_docs_resolve_from_the_team_file_directory(tmp_path: Path) -> None:
    (tmp_path / "team" / "roles").mkdir(parents=True)
    (tmp_path / "team" / "roles" / "a.md").write_text("# a\n")
    text = '[team]\nname = "t"\n[[panels]]\nname = "a"\nrole = "roles/a.md"\n'
    team = parse_team(text, source=tmp_path / "team" / "t.toml")
    assert team.panels[0].role == tmp_path / "team" / "roles" / "a.md"
    with pytest.raises(TeamFileError, match="no role doc at") as caught:
        parse_team(text, source=tmp_path / "t.toml")  # the same text one directory up
    assert (caught.value.line, caught.value.field) == (5, "panels[0].role")


@pytest.mark.parametrize(
    ("first", "second", "line", "field", "words"),
    [
        ('instance = "x"', 'instance = "x"', 8, "panels[1].instance", "instance 'x' is already"),
        ("", 'instance = "a"', 8, "panels[1].instance", "used by the panel on line 4"),
        ('instance = "b"', "", 7, "panels[1].name", "as it sets no `instance`"),
    ],
)
def test_instances_are_not_shared(
    tmp_path: Path, first: str, second: str, line: int, field: str, words: str
) -> None:
    text = (
        f'[team]\nname = "t"\n[[panels]]\nname = "a"\n{first}\n[[panels]]\nname = "b"\n{second}\n'
    )
    with pytest.raises(TeamFileError) as caught:
        parse_team(text, source=tmp_path / "t.toml")
    assert len(caught.value.problems) == 1
    assert (caught.value.line, caught.value.field) == (line, field)
    assert words in str(caught.value)


def test_a_name_used_twice_is_one_problem_not_two(tmp_path: Path) -> None:
    text = '[team]\nname = "t"\n[[panels]]\nname = "a"\n[[panels]]\nname = "a"\n'
    with pytest.raises(TeamFileError) as caught:
        parse_team(text, source=tmp_path / "t.toml")
    assert [p.field for p in caught.value.problems] == ["panels[1].name"]


def test_messages_quote_scalars_only(tmp_path: Path) -> None:
    text = (
        '[team]\nname = "t"\nmax_concurrent_turns = [1, 2]\n'
        '[[panels]]\nname = "a"\nbatch = 3\nmodel = { id = "x" }\n'
    )
    with pytest.raises(TeamFileError) as caught:
        parse_team(text, source=tmp_path / "t.toml")
    message = str(caught.value)
    assert [p.line for p in caught.value.problems] == [3, 6, 7]
    assert "(got 3)" in message and "[1, 2]" not in message and "{" not in message
    assert "should be a table" in message  # TOML's words, not Python's


def test_the_error_keeps_the_config_error_shape(tmp_path: Path) -> None:
    error = TeamFileError.single("broken", path=tmp_path / "t.toml", line=2, field="team.name")
    assert isinstance(error, ConfigError)
    assert str(error) == f"{tmp_path / 't.toml'}:2: field 'team.name': broken"
    assert error.problems == (Problem(tmp_path / "t.toml", 2, "team.name", "broken"),)
    assert str(TeamFileError.single("no such file", path=None)) == "team file: no such file"


def test_a_viewer_gets_the_password_back_from_the_team_file(tmp_path: Path, crew: Path) -> None:
    """The host records its bus without the password; a viewer (CLI, dashboard) reads the
    whole URL from the team file while that file still names the same bus."""
    url = "postgresql://mnemara:secret@db.internal/team"
    crew.write_text(GOOD.replace('bus = "shared/peer.db"', f'bus = "{url}"'))
    meta = {"bus": "postgresql://mnemara@db.internal/team", "source": str(crew)}
    assert recorded_bus(meta) == url
    crew.write_text(GOOD.replace('bus = "shared/peer.db"', 'bus = "postgresql://x@other/db"'))
    assert recorded_bus(meta) == meta["bus"]  # the file moved on: what the host recorded
    crew.write_text("not toml [")
    assert recorded_bus(meta) == meta["bus"]
    assert recorded_bus({"bus": "/a/bus.sqlite", "source": str(crew)}) == "/a/bus.sqlite"
    assert recorded_bus({}) == ""
