"""`[team] sandbox`, `network`, `readable`, `writable`: read, checked, and obeyed by the host."""

from __future__ import annotations

from pathlib import Path

import pytest

from panels.errors import HostError
from panels.host.host import Host
from panels.team import TeamFileError, TeamSpec, parse_team


def team(tmp_path: Path, lines: str, bus: str = "") -> TeamSpec:
    text = f'[team]\nname = "t"\n{bus}{lines}\n[[panels]]\nname = "eng"\n'
    return parse_team(text, source=tmp_path / "t.toml", home=tmp_path / "home")


def test_defaults_confine_when_possible_with_no_network(tmp_path: Path) -> None:
    spec = team(tmp_path, "")
    assert spec.sandbox.mode == "auto" and spec.sandbox.network == "off"
    assert spec.sandbox.read_only == (tmp_path / "t.toml",)


def test_the_settings_are_read_and_a_foreign_bus_is_hidden(tmp_path: Path) -> None:
    (tmp_path / "out").mkdir()
    spec = team(
        tmp_path,
        'sandbox = "required"\nnetwork = ["pypi.org", "files.example:8443"]\n'
        'readable = ["/usr/share"]\nwritable = ["out"]\n',
        bus='bus = "returns.db"\n',
    )
    box = spec.sandbox
    assert box.mode == "required"
    assert box.network == ("pypi.org", "files.example:8443")
    assert box.readable == (Path("/usr/share"),) and box.writable == ((tmp_path / "out"),)
    assert tmp_path / "returns.db" in box.masked and tmp_path / "returns.db-wal" in box.masked


@pytest.mark.parametrize(
    "line", ['sandbox = "maybe"', 'network = "everything"', 'network = ["a b"]', "network = 3"]
)
def test_bad_values_are_refused_with_the_line(tmp_path: Path, line: str) -> None:
    with pytest.raises(TeamFileError) as raised:
        team(tmp_path, line)
    assert "line 3" in str(raised.value) or ":3" in str(raised.value)


def test_readable_and_writable_must_be_directories(tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("", encoding="utf-8")
    with pytest.raises(TeamFileError) as raised:
        team(tmp_path, 'readable = ["missing"]\nwritable = ["a-file"]')
    said = str(raised.value)
    assert f"t.toml:3: field 'team.readable[0]': no directory '{tmp_path / 'missing'}'" in said
    assert f"t.toml:4: field 'team.writable[0]': '{tmp_path / 'a-file'}' is not a dir" in said


def test_a_required_sandbox_stops_the_host_where_bubblewrap_is_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    host = Host(team(tmp_path, 'sandbox = "required"'))
    with pytest.raises(HostError, match=r"required.*bubblewrap.*sandbox = \"auto\""):
        host._sandbox()
    quiet = Host(team(tmp_path, ""))
    assert quiet._sandbox() is None
    assert quiet.sandbox_note.startswith("tools run unconfined") and "apt-get" in quiet.sandbox_note


def test_every_panel_s_role_doc_and_the_rehearsal_script_are_read_only_inside(
    tmp_path: Path,
) -> None:
    from panels.host.turns.confine import guarded_settings

    for name in ("eng.md", "qa.md", "script.toml"):
        (tmp_path / name).write_text("", encoding="utf-8")
    text = (
        '[team]\nname = "t"\nrehearsal = "script.toml"\n'
        '[[panels]]\nname = "eng"\nrole = "eng.md"\n[[panels]]\nname = "qa"\nrole = "qa.md"\n'
    )
    spec = parse_team(text, source=tmp_path / "t.toml", home=tmp_path / "home")
    guarded = guarded_settings(spec).read_only
    expected = {tmp_path / n for n in ("t.toml", "eng.md", "qa.md", "script.toml")}
    assert set(guarded) == expected and len(guarded) == len(expected)


def test_a_role_doc_the_instance_names_is_read_only_inside_when_the_team_file_names_none(
    tmp_path: Path,
) -> None:
    """`mnemara init -i eng --role roles/eng.md` and a team file whose panel has no `role`:
    the turns read the instance's role doc, so the sandbox keeps that one read-only too. A
    panel whose instance does not exist yet, or names no role doc, adds nothing, and an
    instance config that cannot be read is left for the host's own report."""
    from panels.host.turns.confine import guarded_settings
    from runtime.instance.config import InstanceConfig, save_config
    from runtime.instance.home import InstancePaths

    home = tmp_path / "home"
    role = tmp_path / "roles" / "eng.md"
    role.parent.mkdir()
    role.write_text("# Role\n", encoding="utf-8")
    text = '[team]\nname = "t"\n' + "".join(
        f'[[panels]]\nname = "{name}"\n' for name in ("eng", "qa", "ops", "new")
    )
    spec = parse_team(text, source=tmp_path / "t.toml", home=home)
    for name, doc in (("eng", str(role)), ("qa", "")):
        paths = InstancePaths.for_name(name, home)
        paths.root.mkdir(parents=True)
        save_config(paths.config, InstanceConfig(role_doc_path=doc))
    broken = InstancePaths.for_name("ops", home)
    broken.root.mkdir(parents=True)
    broken.config.write_text("{", encoding="utf-8")
    assert set(guarded_settings(spec, home).read_only) == {tmp_path / "t.toml", role}
    assert guarded_settings(spec, tmp_path / "elsewhere").read_only == (tmp_path / "t.toml",)
