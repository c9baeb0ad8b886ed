"""End to end: the real bundled Claude Code CLI against the host's rehearsal model (loopback)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import claude_agent_sdk
import pytest

from panels.host import Host
from panels.host.delivery.feed import OPERATOR, operator_route
from panels.host.demo import EXAMPLE, run_demo
from panels.team import load_team, parse_team
from peerbus import open_bus
from runtime.sandbox import probe
from runtime.store import TurnStore
from tests.panels.host.conftest import FAST, Events

CLI = Path(claude_agent_sdk.__file__).parent / "_bundled" / "claude"
pytestmark = [
    pytest.mark.e2e,
    pytest.mark.anyio,
    pytest.mark.skipif(not CLI.exists(), reason=f"the SDK's bundled CLI is not installed at {CLI}"),
]


@pytest.fixture
def anyio_backend() -> str:
    return "trio"  # the host's own backend; the CLI runs are too slow to repeat per backend


async def test_the_demo_team_runs_to_the_end(tmp_path: Path) -> None:
    lines: list[str] = []
    result = await run_demo(tmp_path, out=lines.append, limit=90)
    assert result.quiet and result.halted and result.claimed == 0, "\n".join(lines)
    story = "\n".join(lines)
    assert "engineer -> producer" in story and "task-1 done" in story  # the report came back
    assert "watchdog halt engineer" in story
    assert (tmp_path / EXAMPLE.name / "work" / "wordcount.py").is_file()
    assert "understood: the engineer was halted" in story.lower()
    # The engineer's `wc` is outside its allowed patterns: the host asked, and the demo,
    # alone, answered yes through the control table (the operator's way), so the story went
    # on at once instead of waiting out the approval timeout.
    assert result.asked == (1,) and result.answers == ("yes",), story
    assert "engineer ASKS (request 1): Bash wc -w wordcount.py" in story
    assert "demo answers approval 1 (Bash wc -w wordcount.py): yes" in story
    assert "operator answer engineer (request=1 answer='yes')" in story  # a command's outcome
    assert "engineer   result: 4 wordcount.py" in story  # the approved call ran
    # The shipped team's sandbox is "auto": where bubblewrap works (as the suite requires)
    # every panel's tools ran confined, the very run a team requiring the sandbox gets
    # (tests/security/test_sandbox_rows.py checks that the two build the same sandbox).
    rows = lines[lines.index("--- what each panel did ---") + 2 :][:3]
    assert [row.split()[0] for row in rows] == ["producer", "engineer", "watchdog"], story
    if probe().available:
        assert all(" sandboxed " in f"{row} " for row in rows), story
        assert "unconfined" not in story
    else:
        assert all(" UNCONFINED " in f"{row} " for row in rows), story


async def test_a_team_file_naming_a_postgresql_bus_runs_the_demo_unchanged(
    tmp_path: Path, pg_url: str
) -> None:
    """The demo team, its team file's only change a `bus` line naming a PostgreSQL database:
    the same story, every peer message on that database, nothing left claimed."""
    team_dir = tmp_path / EXAMPLE.name
    shutil.copytree(EXAMPLE, team_dir, ignore=shutil.ignore_patterns("work"))
    team_file = team_dir / "team.toml"
    text = team_file.read_text(encoding="utf-8")
    team_file.write_text(text.replace("[team]\n", f'[team]\nbus = "{pg_url}"\n', 1))
    team = load_team(team_file, home=tmp_path / "home")
    assert team.bus == pg_url and team.bus_file is None
    lines: list[str] = []
    result = await run_demo(tmp_path, out=lines.append, limit=90, team=team)
    story = "\n".join(lines)
    assert result.quiet and result.halted and result.claimed == 0, story
    assert "engineer   result: 4 wordcount.py" in story and "task-1 done" in story
    async with open_bus(pg_url) as bus:
        sent = {(r.sender, r.recipient) for r in await bus.history(limit=500)}
    assert ("producer", "engineer") in sent and ("engineer", "producer") in sent
    assert (team.state_dir / "bus.sqlite").is_file()  # operator input stayed on this host
    assert "pg-test-secret" not in story  # the bus is named without its password


def cli_children() -> list[int]:
    """Pids of bundled-CLI processes whose parent is this test process."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        if ppid == os.getpid() and b"claude" in cmdline:
            found.append(int(entry.name))
    return found


SLOW_SCRIPT = """
[panels.worker]
[[panels.worker.replies]]
when = { user_text_contains = "job" }
delay_first_token = 30
text = "never seen: this CLI is killed first"

[[panels.worker.replies]]
when = { user_text_contains = "job" }
text = "Did the job."
"""


async def test_a_cli_killed_mid_turn_is_restarted_and_its_message_processed_once(
    tmp_path: Path,
) -> None:
    (tmp_path / "script.toml").write_text(SLOW_SCRIPT)
    (tmp_path / "work").mkdir()
    team = parse_team(
        '[team]\nname = "k"\nrehearsal = "script.toml"\nworkdir = "work"\n'
        '[[panels]]\nname = "worker"\n',
        source=tmp_path / "team.toml",
        home=tmp_path / "mnemara-home",
    )
    events = Events()
    host = Host(team, home=tmp_path / "mnemara-home", policy=FAST, listeners=[events],
                log_interval=0.01)  # fmt: skip
    async with anyio.create_task_group() as tg:
        await tg.start(host.serve)
        bus = host.services.bus
        ident = await bus.submit(OPERATOR, operator_route("worker"), {"text": "do the job"})
        await events.wait("turn_started", "worker")
        # The CLI is an outside process with no event to wait on: look (bounded) until its
        # model request is in flight, then kill it.
        with anyio.fail_after(30):
            while host.rehearsal and not host.rehearsal.requests("worker"):  # noqa: ASYNC110
                await anyio.sleep(0.05)
        pids = cli_children()
        assert pids
        for pid in pids:
            os.kill(pid, signal.SIGKILL)
        ended = await events.wait("turn_ended", "worker", count=2, within=60)
        host.request_stop()
    assert [e.outcome for e in ended] == ["failed", "done"]
    assert events.of("panel_failed", "worker")
    with TurnStore.open(tmp_path / "mnemara-home" / "worker" / "turns.sqlite") as store:
        assert store.consumed_ids() == {ident}
        users = [r.status for r in store.rows() if r.role == "user"]
    assert users == ["complete"]  # the failed try's copy of the input is gone: it came again
    said: Any = [e.text for e in events.of("text", "worker")]
    assert said == ["Did the job."]


ASKING_SCRIPT = """
[panels.worker]
fallback_text = "Understood."

[[panels.worker.replies]]
when = { user_text_contains = "make the file" }
content = [{ tool_use = "Bash", input = { command = "touch made-by-agent.txt" } }]

[[panels.worker.replies]]
when = { tool_result_contains = "" }
text = "The call was refused."
"""


async def test_approve_answer_no_leaves_the_command_unrun(tmp_path: Path) -> None:
    """The defect: `mnemara approve --answer no` (or any word) approved the call. Through the
    real commands: the bundled CLI asks, `mnemara approve --answer no` answers, the Bash call
    never runs and the model reads the refusal."""
    (tmp_path / "script.toml").write_text(ASKING_SCRIPT)
    work = tmp_path / "work"
    work.mkdir()
    team = parse_team(
        '[team]\nname = "ask"\nrehearsal = "script.toml"\nworkdir = "work"\n'
        '[[panels]]\nname = "worker"\n[[panels.policy]]\ntool = "Bash"\nmode = "ask"\n',
        source=tmp_path / "team.toml",
        home=tmp_path / "mnemara-home",
    )
    env = {**os.environ, "MNEMARA_HOME": str(tmp_path / "mnemara-home")}

    def mnemara(*args: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "panels.cli.main", *args]
        return subprocess.run(command, env=env, capture_output=True, text=True, timeout=60,
                              stdin=subprocess.DEVNULL)  # fmt: skip

    events = Events()
    host = Host(team, home=tmp_path / "mnemara-home", listeners=[events], log_interval=0.01)
    async with anyio.create_task_group() as tg:
        await tg.start(host.serve)
        team.pid_path.write_text(f"{os.getpid()}\n")  # as `up` would: the CLI sees a host
        sent = await anyio.to_thread.run_sync(
            mnemara, "send", "-t", "ask", "-p", "worker", "make the file"
        )
        assert sent.returncode == 0, sent.stderr
        (asked,) = await events.wait("approval_request", "worker", within=60)
        wrong = await anyio.to_thread.run_sync(
            mnemara, "approve", "-t", "ask", "-p", "worker", "--answer", "nope"
        )
        assert wrong.returncode == 2 and "answer" in wrong.stderr  # refused, not defaulted
        assert host.services.approvals.pending("worker") == [asked.request]
        no = await anyio.to_thread.run_sync(
            mnemara, "approve", "-t", "ask", "-p", "worker", "--answer", "no"
        )
        assert no.returncode == 0, no.stderr
        (answered,) = await events.wait("approval_answer", "worker")
        await events.wait("turn_ended", "worker", within=60)
        host.request_stop()
    assert answered.answer == "no"
    assert not (work / "made-by-agent.txt").exists()
    (result,) = events.of("tool_result", "worker")
    assert result.error and "not approved" in result.content
