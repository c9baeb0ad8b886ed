"""The dashboard in a real terminal: `mnemara demo`, `run` and `up` in a detached 200x50 tmux
window, read back with `capture-pane`. Each test has its own tmux server (`-L`), a scratch
HOME and MNEMARA_HOME, and kills its server at the end."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
TMUX = shutil.which("tmux")
MNEMARA = str(Path(sys.executable).with_name("mnemara"))
FORBIDDEN = ("Traceback", "ExceptionGroup")
DONE = "exit status:"

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.slow,
    pytest.mark.skipif(TMUX is None, reason="tmux is not installed"),
    pytest.mark.skipif(not Path(MNEMARA).exists(), reason=f"no {MNEMARA} script"),
]


class Window:
    """One command in a detached tmux window; `screen()` is what the terminal shows."""

    def __init__(self, home: Path) -> None:
        assert TMUX is not None
        self.tmux = [TMUX, "-L", f"mnemara-test-{uuid.uuid4().hex[:8]}"]
        self.env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(home),
            "MNEMARA_HOME": str(home / "mnemara"),
            "TERM": "xterm-256color",
            "LANG": "C.UTF-8",
        }

    def start(self, command: str) -> None:
        # The shell says how the command ended, on the screen, once it has ended; the pane
        # stays open after that so the last screen can still be read.
        shell = f"cd {ROOT} && {command}; echo '{DONE}' $?; sleep 600"
        env = [arg for k, v in self.env.items() for arg in ("-e", f"{k}={v}")]
        self.tmux_run("new-session", "-d", "-x", "200", "-y", "50", *env, shell)

    def tmux_run(self, *args: str) -> str:
        done = subprocess.run([*self.tmux, *args], capture_output=True, text=True, timeout=10,
                              env=self.env, check=True)  # fmt: skip
        return done.stdout

    def screen(self) -> str:
        return self.tmux_run("capture-pane", "-p")

    def keys(self, *keys: str) -> None:
        self.tmux_run("send-keys", *keys)

    def until(self, check: Callable[[str], bool], *, within: float = 60.0) -> str:
        """Look at the screen until `check` holds; fail with the last screen after `within`."""
        deadline = time.monotonic() + within
        while True:
            shown = self.screen()
            if check(shown):
                return shown
            if time.monotonic() > deadline:
                raise AssertionError(f"not on screen within {within}s:\n{shown}")
            time.sleep(0.2)

    def kill(self) -> None:
        subprocess.run([*self.tmux, "kill-server"], capture_output=True, timeout=10)


@pytest.fixture
def window(tmp_path: Path) -> Iterator[Window]:
    home = tmp_path / "home"
    home.mkdir()
    win = Window(home)
    try:
        yield win
    finally:
        win.kill()


def exit_status(shown: str) -> int:
    line = next(line for line in shown.splitlines() if line.startswith(DONE))
    return int(line.removeprefix(DONE))


def at_rest(window: Window) -> str:
    """Wait for the demo team to come to rest: the producer and the watchdog idle and the
    engineer halted, with no turn begun across two looks three seconds apart (longer than
    the demo's digest interval, so a digest the watchdog is owed has shown by then)."""
    deadline = time.monotonic() + 90

    def idle(shown: str) -> bool:
        return shown.count("idle · turns") == 2 and "halted (" in shown

    before = window.until(idle, within=90)
    while True:
        time.sleep(3)
        after = window.until(idle, within=90)
        if re.findall(r"turns (\d+)", after) == re.findall(r"turns (\d+)", before):
            return after
        if time.monotonic() > deadline:
            raise AssertionError(f"the demo team did not come to rest within 90s:\n{after}")
        before = after


def test_demo_shows_three_panes_and_prints_its_summary_when_closed(window: Window) -> None:
    window.start(f"{MNEMARA} demo")
    names = ("producer", "engineer", "watchdog")
    # The panes with their names and states; the engineer asks about `wc`, and the
    # approval modal is up (the demo leaves the answer to the operator on a terminal).
    shown = window.until(lambda s: all(n in s for n in names) and "yes (y)" in s)
    assert "WAITING for approval" in shown and "wc -w wordcount.py" in shown
    window.keys("y")
    # The story goes on: the watchdog's halt shows in the engineer's pane.
    shown = window.until(lambda s: "HALTED by watchdog" in s and "halted (" in s)
    assert shown.count(" · turns ") == 3, shown  # each pane's status line: state, turns, ...
    # The story has ended once the others wait for work: the watchdog's report of the halt
    # may still be on its way to the producer when the halt shows, and its answer brings the
    # watchdog a digest; closing then stops a turn (the demo says "still at work", exits 1).
    at_rest(window)
    window.keys("C-q")
    shown = window.until(lambda s: DONE in s)
    assert exit_status(shown) == 0, shown
    assert "--- what each panel did ---" in shown
    assert "approvals asked of the operator: 1; answered: yes" in shown
    assert "the watchdog halted the runaway engineer: yes" in shown
    assert "messages left claimed on the bus: 0" in shown
    assert not any(word in shown for word in FORBIDDEN), shown


def test_run_opens_the_dashboard_and_quitting_stops_the_host(window: Window) -> None:
    home = Path(window.env["MNEMARA_HOME"])
    init_instance(window, "solo1")
    window.start(f"{MNEMARA} run --instance solo1")
    shown = window.until(lambda s: "solo1" in s and "idle · turns 0" in s and "^s Send" in s)
    assert "not built yet" not in shown
    assert (home / "solo1" / "host" / "host.pid").is_file()  # findable while it runs
    window.keys("C-q")
    shown = window.until(lambda s: DONE in s)
    assert exit_status(shown) == 0, shown
    assert not (home / "solo1" / "host" / "host.pid").exists()  # the host stopped
    assert not any(word in shown for word in FORBIDDEN), shown


def init_instance(window: Window, name: str) -> None:
    init = subprocess.run([MNEMARA, "init", "--instance", name], capture_output=True,
                          text=True, timeout=60, env=window.env, cwd=ROOT)  # fmt: skip
    assert init.returncode == 0, init.stderr


@pytest.mark.parametrize(
    "command",
    [
        "{mnemara} run --instance solo2 --no-tui",
        "MNEMARA_NO_TUI=1 {mnemara} run --instance solo2",
        "{mnemara} run --instance solo2 | cat",  # stdout is not a terminal
    ],
)
def test_run_keeps_the_line_repl_when_asked_or_without_a_terminal(
    window: Window, command: str
) -> None:
    init_instance(window, "solo2")
    window.start(command.format(mnemara=MNEMARA))
    window.until(lambda s: "(a team of one)" in s and "you>" in s)
    window.keys("/quit", "Enter")
    shown = window.until(lambda s: DONE in s)
    assert exit_status(shown) == 0, shown
    assert "^s Send" not in shown and "not built yet" not in shown


def test_up_attaches_and_closing_leaves_the_team_running(window: Window, tmp_path: Path) -> None:
    team = tmp_path / "trio"
    shutil.copytree(
        ROOT / "examples" / "teams" / "trio", team, ignore=shutil.ignore_patterns("work")
    )
    window.start(f"{MNEMARA} up {team / 'team.toml'}")
    window.until(lambda s: all(n in s for n in ("producer", "engineer", "watchdog")))
    window.keys("C-q")
    shown = window.until(lambda s: DONE in s)
    assert exit_status(shown) == 0, shown
    assert "mnemara attach -t trio" in shown and "mnemara down -t trio" in shown
    try:
        ps = subprocess.run([MNEMARA, "ps", "-t", "trio"], capture_output=True, text=True,
                            timeout=30, env=window.env, cwd=ROOT)  # fmt: skip
        assert "host running" in ps.stdout, ps.stdout + ps.stderr
    finally:
        down = subprocess.run([MNEMARA, "down", "-t", "trio"], capture_output=True, text=True,
                              timeout=90, env=window.env, cwd=ROOT)  # fmt: skip
    assert down.returncode == 0, down.stdout + down.stderr
