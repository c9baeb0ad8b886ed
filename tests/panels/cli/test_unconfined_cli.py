"""Unconfined tools are said on the terminal, not only in the event log: `up` (detached, and
attached in a real terminal), `ps` and `run`'s banner, each with why and what to do; a
confined team says none of it. "bubblewrap missing" is a PATH without `bwrap`."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from runtime.sandbox import probe
from tests.panels.cli.test_tmux import DONE, FORBIDDEN, MNEMARA, TMUX, Window, exit_status

ROOT = Path(__file__).resolve().parents[3]
WAIT = 90.0
TEAM = '[team]\nname = "t"\nworkdir = "work"\n{line}\n[[panels]]\nname = "eng"\n'
# Where `bwrap` is not: the interpreter's own directory alone.
NO_BWRAP = str(Path(sys.executable).parent)
CONFINES = pytest.mark.skipif(not probe().available, reason="bubblewrap cannot build one here")

pytestmark = pytest.mark.slow


def mnemara(
    *args: str, path: str | None = None, stdin: str = ""
) -> subprocess.CompletedProcess[str]:
    """The real CLI in a child process, without a terminal."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    if path is not None:
        env["PATH"] = path
    return subprocess.run([sys.executable, "-m", "panels.cli.main", *args], input=stdin,
                          capture_output=True, text=True, timeout=WAIT, env=env)  # fmt: skip


@pytest.fixture
def team_file(tmp_path: Path) -> Iterator[Path]:
    """Where the test writes team `t`'s file; its host is stopped at the end."""
    (tmp_path / "work").mkdir()
    yield tmp_path / "team.toml"
    mnemara("down", "-t", "t")


@pytest.mark.parametrize(
    ("line", "path", "why", "fix"),
    [
        ('sandbox = "off"', None, "the sandbox is turned off", 'set sandbox = "auto" under [team]'),
        ("", NO_BWRAP, "bubblewrap (bwrap) is not installed", "apt-get install bubblewrap"),
    ],
    ids=["sandbox-off", "no-bwrap"],
)
def test_up_detach_says_so_on_stderr_and_ps_shows_it(
    team_file: Path, line: str, path: str | None, why: str, fix: str
) -> None:
    team_file.write_text(TEAM.format(line=line))
    up = mnemara("up", str(team_file), "--detach", path=path)
    assert up.returncode == 0, up.stderr  # auto without bubblewrap still starts: it says so
    assert "host of team 't' started" in up.stdout
    (said,) = [s for s in up.stderr.splitlines() if s.startswith("mnemara: warning: ")]
    assert "tools run unconfined" in said and why in said and fix in said, said
    assert str(team_file) in said  # where to change it
    if path is not None:  # and the stricter choice is named
        assert 'or set sandbox = "required"' in said
    ps = mnemara("ps", "-t", "t")
    assert ps.returncode == 0, ps.stderr
    header, eng = ps.stdout.splitlines()[1:3]
    assert "tools" in header and eng.startswith("eng") and "UNCONFINED" in eng
    (warned,) = [s for s in ps.stdout.splitlines() if s.startswith("warning: ")]
    assert why in warned and fix in warned
    for done in (up, ps):
        assert "Traceback" not in done.stderr


@CONFINES
def test_a_confined_team_says_no_warning(team_file: Path) -> None:
    team_file.write_text(TEAM.format(line=""))
    up = mnemara("up", str(team_file), "--detach")
    assert up.returncode == 0, up.stderr
    assert "unconfined" not in up.stdout + up.stderr and "warning" not in up.stderr
    ps = mnemara("ps", "-t", "t")
    eng = ps.stdout.splitlines()[2]
    assert "sandboxed" in eng and "UNCONFINED" not in ps.stdout
    assert "warning" not in ps.stdout


@pytest.mark.parametrize(
    ("args", "path", "said"),
    [
        (["--sandbox", "off"], None, "leave out --sandbox off to confine them"),
        ([], NO_BWRAP, "apt-get install bubblewrap); or give --sandbox required"),
        pytest.param([], None, None, marks=CONFINES),
    ],
    ids=["sandbox-off", "no-bwrap", "confined"],
)
def test_runs_banner_says_so(args: list[str], path: str | None, said: str | None) -> None:
    assert mnemara("init", "-i", "solo").returncode == 0
    run = mnemara("run", "-i", "solo", "--no-tui", *args, path=path, stdin="/quit\n")
    assert run.returncode == 0, run.stderr
    banner = run.stdout.split("you>", 1)[0]
    assert "(a team of one)" in banner
    warned = [s for s in banner.splitlines() if s.startswith("[warning] ")]
    if said is None:
        assert warned == [] and "unconfined" not in run.stdout
    else:
        (line,) = warned
        assert "tools run unconfined" in line and said in line, line
    assert "Traceback" not in run.stderr


@pytest.mark.parametrize(
    ("args", "path", "said"),
    [
        (["--sandbox", "off"], None, "the sandbox is turned off; what the permission rules"),
        ([], NO_BWRAP, "bubblewrap (bwrap) is not installed; install bubblewrap"),
        pytest.param([], None, None, marks=CONFINES),
    ],
    ids=["sandbox-off", "no-bwrap", "confined"],
)
def test_a_rehearsal_s_banner_says_why_as_the_host_s_own_does(
    tmp_path: Path, args: list[str], path: str | None, said: str | None
) -> None:
    """`run --rehearsal` and `rehearse` build the CLI's driver themselves: the REPL's line
    still says why the tools run unconfined, not only that its driver has none."""
    script = tmp_path / "solo.toml"
    script.write_text('[panels.solo]\nfallback_text = "ok"\n', encoding="utf-8")
    assert mnemara("init", "-i", "solo").returncode == 0
    commands = [["run", "-i", "solo", "--no-tui", "--rehearsal"]]
    commands.append(["rehearse", "-i", "solo", "--script"])
    for command in commands:
        done = mnemara(*command, str(script), *args, path=path, stdin="/quit\n")
        assert done.returncode == 0, done.stderr
        banner = done.stdout.split("you>", 1)[0]
        warned = [s for s in banner.splitlines() if s.startswith("[warning] ")]
        if said is None:
            assert warned == [] and "unconfined" not in done.stdout + done.stderr
        else:
            (line,) = warned
            assert said in line and "driver has no sandbox" not in line, line
        assert "Traceback" not in done.stderr


@pytest.mark.e2e
@pytest.mark.skipif(TMUX is None, reason="tmux is not installed")
def test_up_on_a_terminal_marks_the_dashboard_and_says_so_after(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    window = Window(home)
    (tmp_path / "work").mkdir()
    team = tmp_path / "team.toml"
    team.write_text(TEAM.format(line='sandbox = "off"'))
    try:
        window.start(f"{MNEMARA} up {team}")
        shown = window.until(lambda s: "UNCONFINED" in s and "eng" in s)
        assert "warning: tools run unconfined: the sandbox is turned off" in shown
        window.keys("C-q")
        shown = window.until(lambda s: DONE in s)
        assert exit_status(shown) == 0, shown
        # What `up` wrote on stderr before the dashboard took the screen is there after it.
        assert "mnemara: warning: tools run unconfined" in shown
        assert not any(word in shown for word in FORBIDDEN), shown
    finally:
        subprocess.run([MNEMARA, "down", "-t", "t"], capture_output=True, text=True,
                       timeout=WAIT, env=window.env)  # fmt: skip
        window.kill()
