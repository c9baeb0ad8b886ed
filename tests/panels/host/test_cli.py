"""The host's CLI commands through typer's CliRunner: viewers, commands, errors."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import anyio
import pytest
import typer
from typer.testing import CliRunner

from panels.cli.host import host_commands
from panels.hostdb import (
    PanelRow,
    append_events,
    connect,
    pending_commands,
    set_meta,
    upsert_panels,
)
from panels.hostdb.catalogue import HostStarted, Said
from tests.panels.host.conftest import make_team, panels, reply

ROOT = Path(__file__).resolve().parents[3]


def app() -> typer.Typer:
    cli = typer.Typer()
    for name, command in host_commands:
        cli.command(name)(command)
    return cli


def invoke(*args: str) -> Any:
    return CliRunner().invoke(app(), list(args))


@pytest.fixture
def stopped_team(mnemara_home: Path) -> Path:
    """A team whose host ran once (host.sqlite exists) and is not running now."""
    state = mnemara_home / "_teams" / "crew"
    state.mkdir(parents=True)
    conn = connect(state / "host.sqlite")
    upsert_panels(conn, [PanelRow("eng", "worker", "idle", turns=2, usd=0.25)])
    set_meta(conn, {"bus": "b"})  # a started host records its bus
    hostile = "hello \x1b[31mred"
    append_events(
        conn,
        [(1.0, HostStarted(team="crew", bus="b", pid=1)), (1.1, Said(panel="eng", text=hostile))],
    )
    conn.close()
    return state


def test_ps_and_logs_read_the_host_database(stopped_team: Path) -> None:
    result = invoke("ps", "--team", "crew")
    assert result.exit_code == 0, result.output
    assert "host stopped" in result.output and "eng" in result.output and "0.2500" in result.output
    logs = invoke("logs", "--team", "crew")
    assert "eng says: hello [31mred" in logs.output and "\x1b" not in logs.output


def test_commands_queue_while_no_host_runs(stopped_team: Path) -> None:
    result = invoke("halt", "--team", "crew", "--panel", "eng", "--reason", "stop")
    assert result.exit_code == 0 and "no host is running" in result.output
    conn = connect(stopped_team / "host.sqlite")
    (queued,) = pending_commands(conn)
    assert (queued.verb, queued.panel, queued.args) == ("halt", "eng", {"reason": "stop"})
    assert invoke("pause", "--team", "crew", "--panel", "ghost").exit_code == 2


def test_a_team_that_never_ran_is_an_error(mnemara_home: Path) -> None:
    result = invoke("ps", "--team", "nobody")
    assert result.exit_code == 10 and "mnemara up" in result.output


@pytest.mark.anyio
async def test_halt_and_send_reach_a_running_host(
    anyio_backend: str, tmp_path: Path, start_host: Any
) -> None:
    team = make_team(tmp_path, panels("eng"), name="live")
    async with start_host(team, {"eng": [reply("got it")]}) as (host, events, drivers):
        team.pid_path.write_text(f"{os.getpid()}\n")  # as `up` would
        sent = await anyio.to_thread.run_sync(
            invoke, "send", "--team", "live", "--to", "eng", "--wait", "10", "hi"
        )
        assert "input: queued as message" in sent.output
        assert "turn 1 of eng done" in sent.output  # the ticket: the turn that took it ended
        await events.wait("turn_ended", "eng")
        halted = await anyio.to_thread.run_sync(invoke, "halt", "--team", "live", "-p", "eng")
        assert halted.exit_code == 0 and "halt: eng is halted" in halted.output
        assert host.panels["eng"].state == "halted"
    assert drivers["eng"].requests[0].blocks[-1]["text"] == "hi"


@pytest.mark.e2e
@pytest.mark.slow
def test_up_detached_send_ps_down_on_the_solo_example(tmp_path: Path) -> None:
    example = tmp_path / "solo"
    shutil.copytree(ROOT / "examples" / "teams" / "solo", example)
    env = {**os.environ, "MNEMARA_HOME": str(tmp_path / "home"), "PYTHONPATH": str(ROOT)}

    def mnemara(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "panels.cli.main", *args], env=env,
                              cwd=ROOT, capture_output=True, text=True, timeout=60)  # fmt: skip

    started = mnemara("up", str(example / "team.toml"))
    assert started.returncode == 0, started.stderr + started.stdout
    try:
        assert "started" in started.stdout
        again = mnemara("up", str(example / "team.toml"))
        assert again.returncode != 0 and "already running" in again.stderr
        assert mnemara("send", "--team", "solo", "--to", "assistant", "hello").returncode == 0
        with subprocess.Popen(
            [sys.executable, "-m", "panels.cli.main", "logs", "-f", "--team", "solo"],
            env=env, cwd=ROOT, stdout=subprocess.PIPE, text=True,
        ) as follow:  # fmt: skip
            # A reply that never comes ends the wait (and fails the test) instead of hanging.
            guard = threading.Timer(90, follow.kill)
            guard.start()
            replied = False
            try:
                assert follow.stdout is not None
                for line in follow.stdout:  # blocks until the turn's reply is logged
                    if "assistant says: Hello." in line:
                        replied = True
                        break
            finally:
                guard.cancel()
                follow.kill()
            assert replied, "no reply logged within 90 s"
        ps = mnemara("ps", "--team", "solo")
        assert "running" in ps.stdout and "assistant" in ps.stdout
    finally:
        stopped = mnemara("down", "--team", "solo")
    assert stopped.returncode == 0 and "stopped" in stopped.stdout
    assert not (tmp_path / "home" / "_teams" / "solo" / "host.pid").exists()


@pytest.mark.slow
def test_sigterm_stops_a_headless_host_cleanly(tmp_path: Path) -> None:
    import signal

    example = tmp_path / "solo"
    shutil.copytree(ROOT / "examples" / "teams" / "solo", example)
    env = {**os.environ, "MNEMARA_HOME": str(tmp_path / "home"), "PYTHONPATH": str(ROOT)}
    with subprocess.Popen(
        [sys.executable, "-m", "panels.cli.main", "up", str(example / "team.toml"), "--headless"],
        env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    ) as host:  # fmt: skip
        assert host.stdout is not None
        seen = []
        for line in host.stdout:  # blocks until the host says it is ready
            seen.append(line)
            if "host ready" in line:
                break
        host.send_signal(signal.SIGTERM)
        rest, _ = host.communicate(timeout=60)
    assert host.returncode == 0, "".join(seen) + rest
    assert "host stopping" in rest and "host stopped" in rest
    assert not (tmp_path / "home" / "_teams" / "solo" / "host.pid").exists()
