"""A terminal's Ctrl-C goes to the whole foreground process group. It must reach the host
alone: the host stops cleanly and gives a turn in flight its grace. Before, the CLIs were in
the host's group and died at once, so the turn failed and the panel "restarted" as the
host stopped (runtime/claude/bundled.py, runtime/sandbox/launch.py). A real host
(`mnemara up --headless`), real CLIs, sandboxed and unconfined, on the rehearsal model."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from panels.hostdb import connect, submit_command
from panels.hostdb.verbs import Input
from tests.panels.host.test_lifecycle import CLI, LINUX

ROOT = Path(__file__).resolve().parents[3]
SCRIPT = """[panels.p0]
fallback_text = "ok"

[[panels.p0.replies]]
text = "the slow answer"
delay_first_token = 2.0
"""

pytestmark = [
    LINUX,
    pytest.mark.e2e,
    pytest.mark.skipif(not CLI.exists(), reason=f"the SDK's bundled CLI is absent ({CLI})"),
]


@pytest.mark.parametrize("sandbox", ["required", "off"])
def test_a_ctrl_c_reaches_the_host_alone_and_the_turn_in_flight_finishes(
    tmp_path: Path, sandbox: str
) -> None:
    (tmp_path / "work").mkdir()
    (tmp_path / "p0.md").write_text("# Role\nYou are p0.\n")
    (tmp_path / "script.toml").write_text(SCRIPT)
    team_file = tmp_path / "team.toml"
    team_file.write_text(
        '[team]\nname = "cc"\nworkdir = "work"\nrehearsal = "script.toml"\n'
        f'sandbox = "{sandbox}"\n\n[[panels]]\nname = "p0"\nrole = "p0.md"\n'
    )
    home = tmp_path / "home"
    env = {**os.environ, "MNEMARA_HOME": str(home), "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "panels.cli.main", "up", "--headless", str(team_file)]
    with subprocess.Popen(command, cwd=ROOT, env=env, stdin=subprocess.DEVNULL,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          start_new_session=True) as host:  # fmt: skip
        try:
            assert host.stdout is not None
            seen = []
            for line in host.stdout:
                seen.append(line)
                if "host ready" in line:
                    break
            viewer = connect(home / "_teams" / "cc" / "host.sqlite")
            submit_command(viewer, Input(panel="p0", text="take your time"))
            viewer.close()
            for line in host.stdout:  # the turn is under way: its checkpoint is taken
                seen.append(line)
                if "checkpoint" in line:
                    break
            time.sleep(0.5)  # the CLI has sent its request; the answer is 2 s away
            os.killpg(host.pid, signal.SIGINT)  # as a terminal's Ctrl-C: the whole group
            seen.append(host.communicate(timeout=60)[0])
        finally:
            if host.poll() is None:
                host.kill()
    output = "".join(seen)
    assert host.returncode == 0, output
    assert "p0 says: the slow answer" in output and "turn 1 done" in output, output
    assert not any(word in output for word in ("failed", "Fatal", "restarting")), output
