"""MCP wire-through: config servers handed to the SDK, wrapped so their failures are logged.

The wrapper is run here the way the CLI runs it (a subprocess speaking MCP on stdio); the real
CLI against these servers is in tests/runtime/guard/test_live_path.py.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from runtime.instance.config import McpServer
from runtime.instance.home import InstancePaths
from runtime.tools.mcp_wire import WRAPPER, stdio_servers
from runtime.turn.driver import Done, TextDelta
from runtime.turn.open import open_session
from runtime.turn.scripted import ScriptedDriver

ECHO_SERVER = r"""
import json, sys
sys.stderr.write("echo server ready\n"); sys.stderr.flush()
for line in sys.stdin:
    msg = json.loads(line)
    if msg.get("id") is None:
        continue
    if msg["method"] == "initialize":
        result = {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
                  "serverInfo": {"name": "echo", "version": "1"}}
    else:
        result = {"tools": []}
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}) + "\n")
    sys.stdout.flush()
"""


def wrapped(log: Path, *command: str) -> list[str]:
    return [sys.executable, "-I", str(WRAPPER), "--log", str(log), "--server", "s1", "--", *command]


def records(log: Path) -> list[dict[str, Any]]:
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]


def test_servers_keep_their_names_and_go_through_the_wrapper(tmp_path: Path) -> None:
    log = tmp_path / "debug.log"
    server = McpServer(name="fetch", command="uvx", args=("mcp-server-fetch",), env={"A": "1"})
    (spec,) = stdio_servers([server], log)
    assert spec.name == "fetch" and spec.env == {"A": "1"}
    assert spec.command == sys.executable
    assert spec.args == ("-I", str(WRAPPER), "--log", str(log), "--server", "fetch", "--",
                         "uvx", "mcp-server-fetch")  # fmt: skip


@pytest.mark.anyio
async def test_a_turn_hands_the_config_servers_to_the_driver(
    instance: InstancePaths, approver: Any, configure: Any
) -> None:
    configure(mcp_servers=(McpServer(name="echo", command="echo-server"),))
    driver = ScriptedDriver([[TextDelta("hi"), Done()]])
    async with open_session("t1", driver=driver, approver=approver) as s:
        _ = [e async for e in s.turn("hello")]
    (spec,) = driver.requests[0].mcp_servers
    assert spec.name == "echo" and spec.args[-2:] == ("--", "echo-server")
    assert str(instance.debug_log) in spec.args


def test_the_mcp_stream_passes_through_untouched(tmp_path: Path) -> None:
    log = tmp_path / "debug.log"
    messages = [
        {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
    ]
    done = subprocess.run(
        wrapped(log, sys.executable, "-c", ECHO_SERVER),
        input="".join(json.dumps(m) + "\n" for m in messages),
        capture_output=True,
        text=True,
        timeout=30,
    )
    answers = [json.loads(line) for line in done.stdout.splitlines()]
    assert [a["id"] for a in answers] == [0, 1]
    assert answers[0]["result"]["serverInfo"]["name"] == "echo"
    assert "echo server ready" in done.stderr  # copied through to the CLI
    assert done.returncode == 0 and records(log) == []


def test_a_server_that_cannot_start_is_logged(tmp_path: Path) -> None:
    log = tmp_path / "debug.log"
    done = subprocess.run(
        wrapped(log, str(tmp_path / "no-such-server")), capture_output=True, text=True, timeout=30
    )
    assert done.returncode == 127
    (record,) = records(log)
    assert record["kind"] == "error" and record["event"] == "mcp_server_failed"
    assert record["server"] == "s1" and "could not be started" in record["reason"]


def test_a_crash_is_logged_with_its_stderr(tmp_path: Path) -> None:
    log = tmp_path / "debug.log"
    crash = "import sys; sys.stderr.write('loading config\\nKeyError: token\\n'); sys.exit(3)"
    done = subprocess.run(
        wrapped(log, sys.executable, "-c", crash), capture_output=True, text=True, timeout=30
    )
    assert done.returncode == 3
    (record,) = records(log)
    assert record["reason"] == "stopped with exit status 3"
    assert record["stderr"] == "loading config\nKeyError: token"


def test_being_told_to_stop_is_not_a_failure(tmp_path: Path) -> None:
    log = tmp_path / "debug.log"
    # A server that ignores stdin closing and runs until signalled.
    server = "import sys, time; sys.stderr.write('up\\n'); sys.stderr.flush(); time.sleep(60)"
    with subprocess.Popen(
        wrapped(log, sys.executable, "-c", server),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    ) as proc:
        assert proc.stderr is not None
        assert proc.stderr.readline() == b"up\n"  # the wrapper is past its signal setup
        proc.terminate()
        assert proc.wait(timeout=30) == 128 + 15
    assert records(log) == []
