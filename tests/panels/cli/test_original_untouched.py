"""Every read-only command leaves an original mnemara instance byte for byte as it was.

The instance is the original's (tests/originals.py): its turns.sqlite, config, notes, wiki and
Kuzu graph. Each command runs through the real typer app (or the real entry point in a child
process, for the kuzu engine, which never loads beside ladybug), and every path under the
instance is hashed before and after: nothing may be added, removed or changed.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from panels.cli.main import app
from tests.originals import digest, make_original_instance

runner = CliRunner()

READ_ONLY = [
    ["list"],
    ["show", "--instance", "old"],
    ["show", "--instance", "old", "--json", "-n", "3"],
    ["export", "--instance", "old"],
    ["export", "--instance", "old", "--markdown"],
    ["role", "--instance", "old"],
    ["replay", "--instance", "old"],
    ["rewind", "--list", "--instance", "old"],
    ["memory", "search", "loader", "--instance", "old"],
    ["memory", "wiki", "ls", "--instance", "old"],
    ["memory", "wiki", "show", "loader", "--instance", "old"],
    ["memory", "graph", "query", "MATCH (n:Node) RETURN count(n) AS n", "--instance", "old"],
    ["ps", "--team", "old"],
    ["logs", "--team", "old"],
]


def test_read_only_commands_leave_an_original_instance_byte_identical(
    mnemara_home: Path,
) -> None:
    paths = make_original_instance(mnemara_home, graph=False)
    before = digest(paths.root)
    changed = {}
    for args in READ_ONLY:
        result = runner.invoke(app, args)
        assert "Traceback" not in result.stdout + result.stderr, (args, result.stderr)
        after = digest(paths.root)
        if after != before:
            changed[" ".join(args)] = sorted(
                name for name in before.keys() | after.keys() if before.get(name) != after.get(name)
            )
            before = after
    assert changed == {}


def test_show_reads_the_original_window_without_converting_it(mnemara_home: Path) -> None:
    make_original_instance(mnemara_home, graph=False)
    result = runner.invoke(app, ["show", "--instance", "old"])
    assert result.exit_code == 0, result.stderr
    assert "start the refactor" in result.stdout and "now review it" in result.stdout
    assert "refactor" not in result.stdout.replace("start the refactor", "")  # markers: no rows
    assert "the window is empty" not in result.stdout


def cli_in_child(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "MNEMARA_HOME": str(home)}
    return subprocess.run(
        [sys.executable, "-m", "panels.cli.main", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )


@pytest.mark.parametrize(
    "args",
    [
        ["memory", "graph", "query", "MATCH (n:Node) RETURN count(n) AS n", "--instance", "old"],
        ["replay", "--instance", "old"],
    ],
)
def test_a_graph_read_leaves_the_original_kuzu_graph_byte_identical(
    mnemara_home: Path, args: list[str]
) -> None:
    paths = make_original_instance(mnemara_home, graph_engine="kuzu")
    before = digest(paths.root)
    done = cli_in_child(mnemara_home, *args)
    assert "Traceback" not in done.stderr, done.stderr
    assert digest(paths.root) == before
    if args[0] == "memory":
        assert done.returncode == 0, done.stderr
        assert done.stdout.splitlines() == ["n", "6"]


def test_run_refuses_an_original_store_before_it_starts_and_names_migrate(
    mnemara_home: Path,
) -> None:
    paths = make_original_instance(mnemara_home, graph=False)
    before = digest(paths.root)
    result = runner.invoke(app, ["run", "--instance", "old", "--no-tui"], input="/quit\n")
    assert result.exit_code == 5, (result.stdout, result.stderr)
    assert "`mnemara migrate --instance old` converts it (keeping a backup)" in result.stderr
    assert digest(paths.root) == before  # no lease file, no host directory


def test_graph_query_points_at_the_originals_kuzu_graph(mnemara_home: Path) -> None:
    paths = make_original_instance(mnemara_home, graph=False)
    (paths.graph).mkdir()
    (paths.graph / "kuzu_db").write_bytes(b"stands for the original's graph")
    query = ["memory", "graph", "query", "MATCH (n:Node) RETURN n.id", "--instance", "old"]
    result = runner.invoke(app, query)
    assert result.exit_code == 0
    assert "`mnemara migrate --instance old` carries it over" in result.stderr
    assert 'or set graph_engine to "kuzu"' in result.stderr


def test_rehearse_refuses_an_original_store_before_it_starts(mnemara_home: Path) -> None:
    paths = make_original_instance(mnemara_home, graph=False)
    script = Path(__file__).resolve().parents[3] / "examples" / "rehearsal" / "solo.toml"
    before = digest(paths.root)
    args = ["rehearse", "--instance", "old", "--script", str(script)]
    result = runner.invoke(app, args, input="hello\n/quit\n")
    assert result.exit_code == 5, (result.stdout, result.stderr)
    assert "`mnemara migrate --instance old` converts it" in result.stderr
    assert digest(paths.root) == before


WRITERS = [
    ["clear", "--instance", "old"],
    ["note", "--instance", "old", "the loader is slow"],
    ["role", "--instance", "old", "--set", "role.md"],
    ["import", "--instance", "old", "rows.jsonl"],
]


@pytest.mark.parametrize("args", WRITERS, ids=[a[0] for a in WRITERS])
def test_a_command_that_would_change_an_original_instance_refuses_and_names_migrate(
    mnemara_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: list[str]
) -> None:
    """Only `migrate` changes an original's files: the others refuse before a lease file or
    an index is made, and say what to do."""
    paths = make_original_instance(mnemara_home, graph=False)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "role.md").write_text("# Role\n")
    (tmp_path / "rows.jsonl").write_text("")
    before = digest(paths.root)
    result = runner.invoke(app, args)
    assert result.exit_code != 0
    assert "migrate" in result.stderr and "Traceback" not in result.stdout + result.stderr
    assert digest(paths.root) == before


def test_up_refuses_a_team_on_an_original_instance_before_a_host_starts(
    mnemara_home: Path, tmp_path: Path
) -> None:
    paths = make_original_instance(mnemara_home, graph=False)
    team = tmp_path / "team.toml"
    team.write_text('[team]\nname = "crew"\n[[panels]]\nname = "a"\ninstance = "old"\n')
    before = digest(paths.root)
    result = runner.invoke(app, ["up", str(team), "--detach"])
    assert result.exit_code != 0 and "migrate" in result.stderr
    assert digest(paths.root) == before
    assert not (mnemara_home / "_teams" / "crew" / "host.pid").exists()
