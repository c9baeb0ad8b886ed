"""The guard and MCP wire-through on the live path: the real bundled CLI, the rehearsal model.

The sentinel stops a polling Bash loop inside the CLI before its third command runs (the
command appends to a file, so the file proves it); a configured stdio MCP server's tool is
allowed by the default policy and really runs, while a server that cannot start and one that
crashes are logged to debug.log with their stderr and the turn goes on without them.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import claude_agent_sdk
import pytest
from guard_kit import RecordingPolicy, no_git

from runtime.claude import ClaudeDriver
from runtime.guard.halts import Halted
from runtime.instance.config import InstanceConfig, McpServer, save_config
from runtime.instance.home import InstancePaths
from runtime.rehearsal import RehearsalServer, open_rehearsal_server, parse_script
from runtime.store import TurnStore
from runtime.turn.driver import TextDelta, ToolResult
from runtime.turn.events import TurnCommitted

CLI = Path(claude_agent_sdk.__file__).parent / "_bundled" / "claude"
pytestmark = [
    pytest.mark.e2e,
    pytest.mark.anyio,
    pytest.mark.skipif(not CLI.exists(), reason=f"the SDK's bundled CLI is absent ({CLI})"),
]
CREDENTIALS = ("CLAUDE_CODE_OAUTH_TOKEN", "CLAUDE_CONFIG_DIR", "CLAUDE_CODE_USE_BEDROCK")


@dataclass(frozen=True)
class Live:
    server: RehearsalServer
    driver: ClaudeDriver
    paths: InstancePaths
    work: Path


@pytest.fixture
def live(tmp_path: Path, mnemara_home: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    for name in list(os.environ):
        if name.startswith("ANTHROPIC_") or name in CREDENTIALS:
            monkeypatch.delenv(name)
    home, cli_home = tmp_path / "home", tmp_path / "cli-home"
    work = home / "work"
    work.mkdir(parents=True)
    cli_home.mkdir()
    monkeypatch.setenv("HOME", str(home))  # the policy's allowed root

    @asynccontextmanager
    async def start(script: str, config: InstanceConfig) -> AsyncIterator[Live]:
        paths = InstancePaths.for_name("live", mnemara_home)
        paths.root.mkdir()
        paths.role.write_text("# Role\nUse tools when asked.\n", encoding="utf-8")
        save_config(paths.config, config.model_copy(update={"role_doc_path": str(paths.role)}))
        TurnStore.open(paths.turns).close()
        async with open_rehearsal_server(parse_script(script)) as server:
            env = {
                "ANTHROPIC_BASE_URL": server.base_url_for("eng"),
                "ANTHROPIC_API_KEY": "sk-ant-rehearsal",
                "HOME": str(cli_home),
                "CLAUDE_CODE_MAX_RETRIES": "0",
            }
            yield Live(server, ClaudeDriver(env=env), paths, work)

    return start


TICK = "echo tick >> ticks.txt && echo ticked"
POLLING = f"""
[[panels.eng.replies]]
when = {{ user_text_contains = "tick the counter" }}
content = [ {{ text = "Ticking. " }}, {{ tool_use = "Bash", input = {{ command = "{TICK}" }} }} ]

[[panels.eng.replies]]
when = {{ tool_result_contains = "ticked" }}
times = 2
content = [ {{ tool_use = "Bash", input = {{ command = "{TICK}" }} }} ]
"""


async def test_the_sentinel_stops_a_polling_loop_inside_the_cli(
    live: Any, anyio_backend: str
) -> None:
    from runtime.turn.open import open_session

    policy = RecordingPolicy()
    async with (
        live(POLLING, InstanceConfig(runtime_sentinel=True)) as rig,
        open_session(
            "live", driver=rig.driver, approver=policy, cwd=rig.work, git_probe=no_git
        ) as session,
    ):
        events = [e async for e in session.turn("tick the counter until it is done")]
        reply = (await session.store.rows())[-1]
    assert (rig.work / "ticks.txt").read_text() == "tick\ntick\n"  # the third never ran
    assert [c.name for c in policy.asked] == ["Bash", "Bash"]
    (halted,) = [e for e in events if isinstance(e, Halted)]
    assert halted.record.rule == "repeat"
    refused = [e for e in events if isinstance(e, ToolResult) and e.is_error]
    assert len(refused) == 1 and "[SENTINEL HALT] repeat" in refused[0].content
    assert isinstance(events[-1], TurnCommitted)
    assert reply.blocks[-1]["text"] == halted.record.notice()


ECHO_SERVER = r"""
import json, sys
log = sys.argv[1]
for line in sys.stdin:
    msg = json.loads(line)
    if msg.get("id") is None:
        continue
    method, result = msg["method"], {}
    if method == "initialize":
        result = {"protocolVersion": msg["params"].get("protocolVersion", "2025-06-18"),
                  "capabilities": {"tools": {}}, "serverInfo": {"name": "echo", "version": "1"}}
    elif method == "tools/list":
        result = {"tools": [{"name": "echo", "description": "Echo text back.",
                             "inputSchema": {"type": "object",
                                             "properties": {"text": {"type": "string"}},
                                             "required": ["text"]}}]}
    elif method == "tools/call":
        text = msg["params"]["arguments"]["text"]
        with open(log, "a") as out:
            out.write(text + "\n")
        result = {"content": [{"type": "text", "text": "echo: " + text}], "isError": False}
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}) + "\n")
    sys.stdout.flush()
"""

ECHO_SCRIPT = """
[[panels.eng.replies]]
when = { user_text_contains = "echo please" }
content = [ { text = "Calling. " }, { tool_use = "mcp__echo__echo", input = { text = "hi" } } ]

[[panels.eng.replies]]
when = { tool_result_contains = "echo: hi" }
text = "Echoed."
"""


async def test_stdio_servers_run_and_failures_are_logged(
    live: Any, anyio_backend: str, tmp_path: Path
) -> None:
    from runtime.turn.open import open_session

    server_file = tmp_path / "echo_server.py"
    server_file.write_text(ECHO_SERVER, encoding="utf-8")
    calls = tmp_path / "calls.txt"
    crash = "import sys; sys.stderr.write('boom: no token\\n'); sys.exit(3)"
    config = InstanceConfig(
        mcp_servers=(
            McpServer(name="echo", command=sys.executable, args=(str(server_file), str(calls))),
            McpServer(name="broken", command=str(tmp_path / "no-such-server")),
            McpServer(name="crashy", command=sys.executable, args=("-c", crash)),
        )
    )
    async with live(ECHO_SCRIPT, config) as rig:
        async with open_session("live", driver=rig.driver, cwd=rig.work) as session:
            events = [e async for e in session.turn("echo please")]
        tools_offered = [t["name"] for t in rig.server.requests("eng")[0].body.get("tools", [])]
    assert calls.read_text() == "hi\n"  # allowed by the default policy, and it really ran
    (result,) = [e for e in events if isinstance(e, ToolResult)]
    assert not result.is_error and result.content == "echo: hi"
    assert "".join(e.text for e in events if isinstance(e, TextDelta)).endswith("Echoed.")
    assert "mcp__echo__echo" in tools_offered
    assert not any(name.startswith(("mcp__broken", "mcp__crashy")) for name in tools_offered)
    logged = [json.loads(line) for line in rig.paths.debug_log.read_text().splitlines()]
    failed = {r["server"]: r for r in logged if r["event"] == "mcp_server_failed"}
    assert "could not be started" in failed["broken"]["reason"]
    assert failed["crashy"]["reason"] == "stopped with exit status 3"
    assert failed["crashy"]["stderr"] == "boom: no token"


# Not `sleep 30`: the CLI refuses long sleeps outright, and this must reach the timeout.
SLOW = "python3 -c 'import time; time.sleep(30)' && echo woke"
SLEEPY = f"""
[[panels.eng.replies]]
when = {{ user_text_contains = "sleep please" }}
content = [ {{ tool_use = "Bash", input = {{ command = "{SLOW}" }} }} ]

[[panels.eng.replies]]
when = {{ tool_result_contains = "" }}
text = "Done."
"""


# The timeout is the CLI's own (the config reaches it as an environment variable): the same
# whichever loop runs the session, so one CLI run, on the host's loop, waits it out.
@pytest.mark.parametrize("anyio_backend", ["trio"])
async def test_bash_timeout_seconds_is_honoured_by_the_bash_tool(
    live: Any, anyio_backend: str
) -> None:
    from runtime.turn.open import open_session

    async with (
        live(SLEEPY, InstanceConfig(bash_timeout_seconds=2)) as rig,
        open_session(
            "live", driver=rig.driver, approver=RecordingPolicy(), cwd=rig.work
        ) as session,
    ):
        with anyio.fail_after(20):  # the command alone would take 30 s
            events = [e async for e in session.turn("sleep please")]
    (result,) = [e for e in events if isinstance(e, ToolResult)]
    assert result.is_error and "timed out after 2s" in result.content
    assert "woke" not in result.content
