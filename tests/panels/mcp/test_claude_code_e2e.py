"""A Claude Code CLI holds a conversation with a panel through `mnemara mcp`, offline.

Two real CLIs against one rehearsal model: the team's host runs panel `producer` (its CLI is
the host's, as in every host test), and the test starts the bundled CLI as an outside agent
whose MCP config starts `mnemara mcp -t TEAM --as claude-code` over stdio. The outside CLI's
script sends a question to the producer, waits, reads its inbox and acknowledges the reply;
the producer's script answers claude-code. Every message travels the team's bus.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio
import claude_agent_sdk
import pytest

from panels.host import Host
from panels.team import load_team
from peerbus import open_bus
from runtime.rehearsal.env import rehearsal_env
from tests.panels.host.conftest import FAST, Events

CLI = Path(claude_agent_sdk.__file__).parent / "_bundled" / "claude"
pytestmark = [
    pytest.mark.e2e,
    pytest.mark.anyio,
    pytest.mark.skipif(not CLI.exists(), reason=f"the SDK's bundled CLI is not installed at {CLI}"),
]

TEAM = """
[team]
name = "mcpteam"
rehearsal = "script.toml"
workdir = "work"

[team.external.claude-code]
writes_to = ["producer"]

[[panels]]
name = "producer"
listens_to = ["claude-code"]
"""

SCRIPT = """
[panels.producer]
fallback_text = "Nothing else."

[[panels.producer.replies]]
when = { inbox_from = "claude-code" }
[[panels.producer.replies.content]]
text = "Answering claude-code."
[[panels.producer.replies.content]]
tool_use = "mcp__mnemara__send_message"
input = { to = "claude-code", terminal = true, text = "The answer is 42." }

[panels.claude-code]
fallback_text = "Done."

[[panels.claude-code.replies]]
when = { user_text_contains = "Ask the producer" }
[[panels.claude-code.replies.content]]
text = "Asking the producer."
[[panels.claude-code.replies.content]]
tool_use = "mcp__mnemara__send"
input = { to = "producer", text = "What is the answer?", key = "question-1" }

[[panels.claude-code.replies]]
when = { tool_result_contains = '"sent"' }
content = [{ tool_use = "mcp__mnemara__wait", input = { timeout_seconds = 120 } }]

[[panels.claude-code.replies]]
when = { tool_result_contains = '"waiting": 1' }
content = [{ tool_use = "mcp__mnemara__inbox", input = {} }]

[[panels.claude-code.replies]]
when = { tool_result_contains = "The answer is 42." }
content = [{ tool_use = "mcp__mnemara__ack", input = { ids = [2] } }]

[[panels.claude-code.replies]]
when = { tool_result_contains = '"acked": [2]' }
text = "The producer says the answer is 42."
"""
TOOLS = ("send", "wait", "inbox", "ack")


@pytest.fixture
def anyio_backend() -> str:
    return "trio"  # the host's own backend


async def test_claude_code_talks_to_a_panel_through_mnemara_mcp(
    tmp_path: Path, mnemara_home: Path
) -> None:
    (tmp_path / "work").mkdir()
    (tmp_path / "script.toml").write_text(SCRIPT)
    (tmp_path / "team.toml").write_text(TEAM)
    team = load_team(tmp_path / "team.toml")
    config = tmp_path / "mcp.json"
    server = [sys.executable, "-m", "panels.cli.main", "mcp", "-t", str(team.source),
              "--as", "claude-code"]  # fmt: skip
    config.write_text(json.dumps({"mcpServers": {"mnemara": {
        "type": "stdio", "command": server[0], "args": server[1:],
        "env": {"MNEMARA_HOME": str(mnemara_home)},
    }}}))  # fmt: skip
    events = Events()
    host = Host(team, policy=FAST, listeners=[events], log_interval=0.01)
    async with anyio.create_task_group() as tg:
        await tg.start(host.serve)
        assert host.rehearsal is not None
        env = rehearsal_env(host.rehearsal.base_url_for("claude-code"), tmp_path / "cli-home")
        argv = [str(CLI), "-p", "Ask the producer what the answer is, then read its reply.",
                "--output-format", "json", "--model", "claude-sonnet-4-5",
                "--mcp-config", str(config), "--strict-mcp-config", "--max-turns", "8",
                "--allowedTools", ",".join(f"mcp__mnemara__{t}" for t in TOOLS)]  # fmt: skip
        with anyio.fail_after(150):
            done = await anyio.run_process(argv, env=env, check=False, cwd=tmp_path / "work")
        out, err = done.stdout.decode(), done.stderr.decode()
        assert done.returncode == 0, (out, err)
        result = json.loads(out)
        assert result["result"] == "The producer says the answer is 42.", result
        host.request_stop()
    # What the outside CLI's model saw of each tool: the answers the script keyed on.
    assert host.rehearsal is not None
    seen = json.dumps([r.body for r in host.rehearsal.requests("claude-code")])
    assert '\\"waiting\\": 1' in seen and '\\"acked\\": [2]' in seen
    turns = events.of("turn_ended", "producer")
    assert [t.outcome for t in turns] == ["done"]
    async with open_bus(team.bus) as bus:
        sent = [(r.sender, r.recipient, r.id) for r in await bus.history(limit=20)]
        assert sent == [("claude-code", "producer", 1), ("producer", "claude-code", 2)]
        assert await bus.inbox("claude-code") == []  # read and acknowledged: nothing waits
        assert await bus.inbox("producer") == []
