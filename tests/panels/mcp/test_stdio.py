"""`mnemara mcp` over stdio, spoken to line by line: a client that stops its server with SIGTERM
(as clients do) while the server holds a claimed message gets it back on the bus at once,
and the server exits 0 without waiting for stdin to close."""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from anyio.streams.buffered import BufferedByteReceiveStream

from panels.team import load_team
from peerbus import open_bus

pytestmark = pytest.mark.anyio
TEAM = '[team]\nname = "crew"\n[team.external.cc]\nwrites_to = ["a"]\n[[panels]]\nname = "a"\n'


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def line(ident: int | None, method: str, params: dict[str, Any]) -> bytes:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params}
    if ident is not None:
        message["id"] = ident
    return json.dumps(message).encode() + b"\n"


async def test_sigterm_ends_the_server_and_gives_back_what_it_held(
    tmp_path: Path, mnemara_home: Path
) -> None:
    (tmp_path / "team.toml").write_text(TEAM)
    team = load_team(tmp_path / "team.toml")
    assert team.bus_file is not None
    team.bus_file.parent.mkdir(parents=True)
    async with open_bus(team.bus) as bus:
        ident = await bus.submit("a", "cc", {"type": "message", "text": "for cc"})
    argv = [sys.executable, "-m", "panels.cli.main", "mcp", "-t", str(team.source), "--as", "cc"]
    with anyio.fail_after(60):
        async with await anyio.open_process(argv, env=dict(os.environ)) as proc:
            assert proc.stdin is not None and proc.stdout is not None
            out = BufferedByteReceiveStream(proc.stdout)
            hello = {"name": "test", "version": "1"}
            init = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": hello}
            await proc.stdin.send(line(1, "initialize", init))
            assert json.loads(await out.receive_until(b"\n", 1 << 20))["id"] == 1
            await proc.stdin.send(line(None, "notifications/initialized", {}))
            await proc.stdin.send(line(2, "tools/call", {"name": "inbox", "arguments": {}}))
            answer = json.loads(await out.receive_until(b"\n", 1 << 20))
            held = json.loads(answer["result"]["content"][0]["text"])["messages"]
            assert [(m["id"], m["text"]) for m in held] == [(ident, "for cc")]
            proc.send_signal(signal.SIGTERM)  # stdin stays open: the server must not wait on it
            assert await proc.wait() == 0
    async with open_bus(team.bus) as bus:
        assert [(p.id, p.state) for p in await bus.inbox("cc")] == [(ident, "new")]
