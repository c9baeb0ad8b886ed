"""`mnemara mcp --http` as a process, driven by the `mcp` SDK's own client over streamable HTTP.

One server on 127.0.0.1 (no token) carries the tools and the delivery rules: the tool list,
send with its idempotency key, refusals as tool errors, inbox/ack, wait on the bus's waiter,
a client that leaves without acking (its messages come back after the lease), status with the
host down, events as the catalogue renders them, dead letters, and the give-back when the
server stops. A second server on 127.0.0.2 with a token refuses a wrong or missing one.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from panels.hostdb import PanelRow, append_events, connect, set_meta, upsert_panels
from panels.hostdb.catalogue import HostStarted, Warned
from panels.team import TeamSpec, load_team
from peerbus import open_bus

pytestmark = pytest.mark.anyio
TOKEN = "a-token-of-twenty-chars"
TEAM = """
[team]
name = "crew"
workdir = "work"
[team.external.cc]
writes_to = ["a"]
max_chars = 50
[[panels]]
name = "a"
[[panels]]
name = "b"
"""


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the server's and the SDK client's own loop (uvicorn runs on asyncio)


@pytest.fixture
def team(tmp_path: Path, mnemara_home: Path) -> TeamSpec:
    (tmp_path / "work").mkdir()
    (tmp_path / "team.toml").write_text(TEAM)
    spec = load_team(tmp_path / "team.toml")
    spec.state_dir.mkdir(parents=True)
    conn = connect(spec.hostdb_path)  # a host that ran once and is gone
    upsert_panels(conn, [PanelRow("a", "worker", "idle"), PanelRow("b", "worker", "idle")])
    set_meta(conn, {"bus": spec.bus, "source": str(spec.source)})
    events = [HostStarted(team="crew", bus=spec.bus, pid=1), Warned(panel=None, message="hm")]
    append_events(conn, [(time.time(), e) for e in events])
    conn.close()
    return spec


@contextmanager
def server(team: TeamSpec, *extra: str) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """`mnemara mcp --http` on a free port; its URL once it listens."""
    argv = [sys.executable, "-m", "panels.cli.main", "mcp", "-t", str(team.source), "--as", "cc"]
    proc = subprocess.Popen(
        [*argv, "--http", "--port", "0", *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        env=os.environ.copy(),
    )
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()  # blocks until it listens (or exits: an empty line)
        assert "serving team crew" in first, proc.communicate(timeout=30)
        yield proc, first.rsplit(" ", 1)[1].strip()
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)  # and closes the pipes
    assert "Traceback" not in err and proc.returncode == 0, err


@asynccontextmanager
async def client(url: str, token: str | None = None) -> AsyncIterator[Client]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as http,
        Client(streamable_http_client(url, http_client=http)) as connected,
    ):
        yield connected


async def call(c: Client, tool: str, **args: Any) -> tuple[bool, str]:
    result = await c.call_tool(tool, args)
    text = result.content[0].text  # type: ignore[union-attr]
    return result.is_error, text


async def ok(c: Client, tool: str, **args: Any) -> Any:
    error, text = await call(c, tool, **args)
    assert not error, text
    return json.loads(text) if text.startswith("{") else text


@pytest.mark.slow
async def test_the_tools_over_http_keep_the_bus_rules(team: TeamSpec) -> None:
    async with open_bus(team.bus) as bus:
        await bus.submit("a", "cc", {"type": "message", "text": "first reply"})
        poison = await bus.submit("b", "cc", {"type": "message", "text": "never read"})
        claim = await bus.claim("cc")
        await bus.fail(claim, reason="given up in the test", only=[poison])
        await bus.nack(claim, count=False)
    with server(team) as (proc, url):
        assert url.startswith("http://127.0.0.1:")
        async with client(url) as c:
            listed = {t.name: t for t in (await c.list_tools()).tools}
            assert list(listed) == ["send", "inbox", "ack", "wait", "status", "events",
                                    "dead_letters"]  # fmt: skip
            assert all(
                t.description and t.input_schema["type"] == "object" for t in listed.values()
            )
            assert listed["send"].input_schema["required"] == ["to", "text", "key"]

            sent = await ok(c, "send", to="a", text="hello a", key="k1")
            again = await ok(c, "send", to="a", text="hello a", key="k1")  # a client's retry
            assert sent == again and sent["sent"][0]["to"] == "a"
            for bad, says in [
                ({"to": "b"}, "writes_to does not name it"),
                ({"to": "a@operator"}, "only the operator writes there"),
                ({"to": "ghost"}, "no panel 'ghost'"),
                ({"text": "x" * 51}, "at most 50"),
                ({"key": ""}, "give `key`"),
            ]:
                error, text = await call(c, "send", **{"to": "a", "text": "t", "key": "k9", **bad})
                assert error and says in text, text
            assert (await call(c, "approve", request=1))[0]  # no such tool: no approvals here

            got = await ok(c, "inbox", lease_seconds=5)
            assert [(m["from"], m["text"]) for m in got["messages"]] == [("a", "first reply")]
            assert await ok(c, "ack", ids=[got["messages"][0]["id"]]) == {
                "acked": [got["messages"][0]["id"]]
            }
            error, text = await call(c, "ack", ids=[999])
            assert error and "not held by this server" in text

            status = await ok(c, "status")
            assert status.startswith("team crew: host stopped; bus ")
            assert "the host is DOWN: messages you send wait on the bus" in status
            assert any(line.startswith("a ") for line in status.splitlines())
            events = await ok(c, "events", count=5)
            assert "#1" in events and "HostStarted(" not in events and "hm" in events
            dead = await ok(c, "dead_letters")
            assert [(d["from"], d["reason"]) for d in dead["dead_letters"]] == [
                ("b", "given up in the test")
            ]

            # wait parks on the bus's waiter: a message sent meanwhile ends it at once.
            async with anyio.create_task_group() as tg, open_bus(team.bus) as bus:
                waited: list[Any] = []

                async def waiting() -> None:
                    waited.append(await ok(c, "wait", timeout_seconds=60))

                tg.start_soon(waiting)
                started = time.monotonic()
                await bus.submit("a", "cc", {"type": "message", "text": "second"})
            assert waited == [{"waiting": 1}] and time.monotonic() - started < 20

            # A client that takes its messages and leaves without acking loses nothing.
            taken = await ok(c, "inbox", lease_seconds=5)
        assert [m["text"] for m in taken["messages"]] == ["second"]
        async with client(url) as c:
            assert (await ok(c, "inbox"))["messages"] == []  # still leased to the one that left
            assert await ok(c, "wait", timeout_seconds=60) == {"waiting": 1}  # the lease ended
            back = await ok(c, "inbox", lease_seconds=300)
            assert [m["text"] for m in back["messages"]] == ["second"]
        # The server stops holding it: it is given back at once, not at the lease's end.
        proc.send_signal(signal.SIGINT)
        await anyio.to_thread.run_sync(lambda: proc.wait(timeout=30))
    async with open_bus(team.bus) as bus:
        pending = await bus.inbox("cc")
        assert [(p.state, json.loads(p.payload_json)["text"]) for p in pending] == [
            ("new", "second")
        ]
        sent_rows = [r for r in await bus.history(limit=50) if r.sender == "cc"]
        assert [(r.recipient, r.id) for r in sent_rows] == [("a", sent["sent"][0]["id"])]


async def test_a_token_server_refuses_a_wrong_or_missing_token(team: TeamSpec) -> None:
    with server(team, "--bind", "127.0.0.2", "--token", TOKEN) as (_, url):
        assert url.startswith("http://127.0.0.2:")
        async with client(url, TOKEN) as c:
            assert "team crew" in await ok(c, "status")
        async with httpx2.AsyncClient(timeout=30) as http:
            probe = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
            for headers in ({}, {"Authorization": f"Bearer {TOKEN}x"}, {"Authorization": TOKEN}):
                answer = await http.post(url, json=probe, headers=headers)
                assert answer.status_code == 403 and "needs its token" in answer.text
            evil = {"Authorization": f"Bearer {TOKEN}", "Origin": "http://evil.example"}
            answer = await http.post(url, json=probe, headers=evil)
            assert answer.status_code == 403 and "another site" in answer.text


def test_an_agent_the_team_file_does_not_admit_is_refused_in_one_line(team: TeamSpec) -> None:
    argv = [sys.executable, "-m", "panels.cli.main", "mcp", "-t", str(team.source)]
    done = subprocess.run(
        [*argv, "--as", "ghost"], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == (
        f"mnemara: 'ghost' is not admitted to team 'crew' (admitted: cc); add "
        f"[team.external.ghost] with writes_to = [...] to {team.source}\n"
    )
