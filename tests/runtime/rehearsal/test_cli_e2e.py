"""The real bundled Claude Code CLI, run through the SDK against the rehearsal server.

Loopback only: the CLI gets the server's URL as ANTHROPIC_BASE_URL, a dummy key, an empty
HOME and the switches that stop it from calling anything else.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import claude_agent_sdk
import pytest
from claude_agent_sdk import (
    AssistantMessage,
    ClaudeAgentOptions,
    PermissionResultAllow,
    ResultMessage,
    TextBlock,
    ToolPermissionContext,
    query,
)

from runtime.rehearsal import RehearsalServer, Reply, open_rehearsal_server, parse_script

CLI = Path(claude_agent_sdk.__file__).parent / "_bundled" / "claude"
pytestmark = [
    pytest.mark.e2e,
    pytest.mark.anyio,
    pytest.mark.skipif(not CLI.exists(), reason=f"the SDK's bundled CLI is not installed at {CLI}"),
]


@pytest.fixture
def anyio_backend() -> str:
    """The CLI is a process of its own, the same whichever loop runs the server; the server
    on both backends is test_server.py's (real loopback HTTP), and the bundled CLI against it
    on asyncio is tests/e2e/'s (every test there runs on both): repeating each CLI run here
    per backend cost a CLI session a test and proved nothing more."""
    return "trio"  # the host's own backend


# Long enough that tools + system pass the 1,024-token minimum, so the CLI's breakpoints cache.
ROLE_DOC = "# Role\nYou are a careful engineer on a rehearsal team.\n" + "Keep notes short. " * 300


def cli_env(server: RehearsalServer, panel: str, home: Path) -> dict[str, str]:
    return {
        "ANTHROPIC_BASE_URL": server.base_url_for(panel),
        "ANTHROPIC_API_KEY": "sk-ant-rehearsal",
        "HOME": str(home),
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_AUTOUPDATER": "1",
        # A failed call is final at once: the CLI would otherwise back off 0.5 s, 1 s, 2 s...
        "CLAUDE_CODE_MAX_RETRIES": "0",
    }


async def run(
    server: RehearsalServer,
    panel: str,
    prompt: str,
    tmp_path: Path,
    *,
    unset: tuple[str, ...] = (),
    **options: Any,
) -> tuple[list[Any], BaseException | None]:
    """Run one query; return its messages and the exception it ended with, if any.

    `unset` names variables of `cli_env` to leave out; `options` go to ClaudeAgentOptions.
    """
    home = tmp_path / "home"
    work = tmp_path / "work"
    home.mkdir(exist_ok=True)
    work.mkdir(exist_ok=True)

    async def one_prompt() -> AsyncIterator[dict[str, Any]]:
        yield {"type": "user", "message": {"role": "user", "content": prompt}}

    env = {k: v for k, v in cli_env(server, panel, home).items() if k not in unset}
    opts = ClaudeAgentOptions(
        env=env,
        cwd=str(work),
        setting_sources=[],
        system_prompt=ROLE_DOC,
        **{"tools": [], **options},
    )
    messages: list[Any] = []
    try:
        async for message in query(prompt=one_prompt(), options=opts):
            messages.append(message)
    except Exception as exc:  # the SDK raises after an error result; the test inspects it
        return messages, exc
    return messages, None


def result_of(messages: list[Any]) -> ResultMessage:
    results = [m for m in messages if isinstance(m, ResultMessage)]
    assert results, f"no result message in {messages!r}"
    return results[-1]


def texts(messages: list[Any]) -> list[str]:
    return [
        b.text
        for m in messages
        if isinstance(m, AssistantMessage)
        for b in m.content
        if isinstance(b, TextBlock)
    ]


async def test_text_reply_and_usage_reach_the_result(anyio_backend: str, tmp_path: Path) -> None:
    script = parse_script("[[panels.eng.replies]]\ntext = 'Hello from the rehearsal.'\n")
    async with open_rehearsal_server(script) as server:
        messages, error = await run(server, "eng", "hello there", tmp_path)
    assert error is None
    assert texts(messages) == ["Hello from the rehearsal."]
    result = result_of(messages)
    assert not result.is_error
    (record,) = server.requests("eng")
    assert record.body["messages"][0]["content"] == "hello there"
    assert record.usage is not None and result.usage is not None
    assert result.usage["input_tokens"] == record.usage.input_tokens
    assert result.usage["cache_creation_input_tokens"] == record.usage.cache_creation_input_tokens
    assert result.total_cost_usd == pytest.approx(record.cost_usd)
    assert server.other_requests == () and server.failures == ()


async def test_bash_tool_call_runs_and_its_result_comes_back(
    anyio_backend: str, tmp_path: Path
) -> None:
    script = parse_script(
        """
[[panels.eng.replies]]
when = { user_text_contains = "write the marker" }
content = [
  { text = "Writing it." },
  { tool_use = "Bash", input = { command = "echo rehearsed > marker.txt && echo written" } },
]

[[panels.eng.replies]]
when = { tool_result_contains = "written" }
text = "The marker is written."
"""
    )
    asked: list[str] = []

    async def allow(
        name: str, tool_input: dict[str, Any], ctx: ToolPermissionContext
    ) -> PermissionResultAllow:
        asked.append(f"{name}: {tool_input['command']}")
        return PermissionResultAllow()

    async with open_rehearsal_server(script) as server:
        messages, error = await run(
            server, "eng", "please write the marker", tmp_path, tools=["Bash"], can_use_tool=allow
        )
    assert error is None
    assert asked == ["Bash: echo rehearsed > marker.txt && echo written"]
    assert (tmp_path / "work" / "marker.txt").read_text() == "rehearsed\n"
    first, second = server.requests("eng")
    assert [first.source, second.source] == ["panels.eng.replies[0]", "panels.eng.replies[1]"]
    result_block = second.body["messages"][-1]["content"][0]
    assert result_block["type"] == "tool_result"
    assert result_block["tool_use_id"] == "toolu_rehearsal_000001"
    assert "written" in str(result_block["content"])
    assert texts(messages)[-1] == "The marker is written."
    assert result_of(messages).num_turns == 2


async def test_overloaded_error_surfaces_as_an_error(anyio_backend: str, tmp_path: Path) -> None:
    script = parse_script("[[panels.eng.replies]]\nerror = 'overloaded'\ntimes = 'always'\n")
    async with open_rehearsal_server(script) as server:
        messages, error = await run(server, "eng", "hello", tmp_path)
    result = result_of(messages)
    assert result.is_error
    assert result.api_error_status == 529
    assert error is not None and "529" in str(error)
    assert [r.status for r in server.requests("eng")] == [529]  # no retries with the cap at 0


async def test_identical_prefix_is_read_from_the_cache_the_second_time(
    anyio_backend: str, tmp_path: Path
) -> None:
    def hook(request: dict[str, Any]) -> Reply:
        return Reply.text("Noted.")

    async with open_rehearsal_server({"eng": hook}) as server:
        first, _ = await run(server, "eng", "same prompt", tmp_path)
        second, _ = await run(server, "eng", "same prompt", tmp_path)
    one, two = server.requests("eng")
    assert one.usage is not None and two.usage is not None
    assert one.usage.cache_read_input_tokens == 0
    assert one.usage.cache_creation_input_tokens > 1024
    # Everything the first request wrote (role doc through its last breakpoint) is read back.
    assert two.usage.cache_read_input_tokens == one.usage.cache_creation_input_tokens
    assert two.divergence is None
    usage = result_of(second).usage
    assert (
        usage is not None and usage["cache_read_input_tokens"] == two.usage.cache_read_input_tokens
    )
    cheaper, dearer = result_of(second).total_cost_usd, result_of(first).total_cost_usd
    assert cheaper is not None and dearer is not None and cheaper < dearer


async def test_startup_traffic_is_answered_without_using_the_script(
    anyio_backend: str, tmp_path: Path
) -> None:
    # Without CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC the CLI also checks HEAD /api/hello and
    # asks the model for a session title (a JSON-schema side request). Neither may hang the
    # session or take the panel's scripted reply.
    script = parse_script("[[panels.eng.replies]]\ntext = 'The one scripted answer.'\n")
    async with open_rehearsal_server(script) as server:
        messages, error = await run(
            server,
            "eng",
            "hello there",
            tmp_path,
            unset=("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC",),
        )
    assert error is None
    assert texts(messages) == ["The one scripted answer."]
    # The title request was seen in every run so far; it is a side task of the CLI, so the
    # test only insists that whatever came besides the turn was answered on the side.
    sources = [r.source for r in server.requests("eng")]
    assert sources.count("panels.eng.replies[0]") == 1
    assert set(sources) <= {"panels.eng.replies[0]", "structured-default"}
    assert {(r.method, r.status) for r in server.other_requests} <= {("HEAD", 404)}
