"""ClaudeDriver with the real Claude Code CLI bundled in the SDK, offline.

No test here reaches a model: one runs with no credentials at all, one against a loopback
socket that accepts the CLI's request and never answers (so the turn is surely mid-flight
when it is stopped). Both check that no CLI process is left behind.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import pytest

from runtime.claude import ClaudeDriver
from runtime.errors import CREDENTIALS_HELP
from runtime.turn.driver import DriverEvent, ErrorEvent

pytestmark = pytest.mark.anyio

# Anything through which the CLI could find a credential or a model service.
CREDENTIAL_VARS = ("CLAUDE_CODE_OAUTH_TOKEN", "CLAUDE_CONFIG_DIR", "CLAUDE_CODE_USE_BEDROCK")
CREDENTIAL_VARS += ("CLAUDE_CODE_USE_VERTEX", "AWS_BEARER_TOKEN_BEDROCK")
# The SDK waits 5 s after closing stdin before it sends SIGTERM: a stop that took less
# ended by the interrupt, however slow the machine.
SDK_GRACE_S = 5.0


@pytest.fixture
def no_credentials(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """An environment with no key, no login and no base URL: an empty HOME, no ANTHROPIC_*."""
    import os

    for name in list(os.environ):
        if name.startswith("ANTHROPIC_") or name in CREDENTIAL_VARS:
            monkeypatch.delenv(name)
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    return home


async def test_no_credentials_is_a_credentials_error(
    no_credentials: Path, make_request: Any, cli_children: Any
) -> None:
    with anyio.fail_after(30):
        events: list[DriverEvent] = [e async for e in ClaudeDriver().run_turn(make_request())]

    assert len(events) >= 1
    error = events[-1]
    assert isinstance(error, ErrorEvent) and error.kind == "credentials", events
    assert CREDENTIALS_HELP in error.message
    assert not error.retryable
    assert cli_children() == []


async def test_a_missing_cli_is_a_cli_error(make_request: Any, tmp_path: Path) -> None:
    driver = ClaudeDriver(cli_path=str(tmp_path / "no-such-claude"))
    with anyio.fail_after(10):
        events = [e async for e in driver.run_turn(make_request())]
    assert len(events) == 1 and isinstance(events[0], ErrorEvent)
    assert events[0].kind == "cli" and "claude-agent-sdk" in events[0].message


async def test_stopping_mid_turn_leaves_no_cli_process(
    no_credentials: Path, make_request: Any, cli_children: Any
) -> None:
    request_sent = anyio.Event()

    async def hold(stream: anyio.abc.SocketStream) -> None:
        async with stream:
            request_sent.set()
            await anyio.sleep_forever()

    listener = await anyio.create_tcp_listener(local_host="127.0.0.1")
    port = listener.extra(anyio.abc.SocketAttribute.local_port)
    driver = ClaudeDriver(
        env={"ANTHROPIC_BASE_URL": f"http://127.0.0.1:{port}", "ANTHROPIC_API_KEY": "sk-ant-test"}
    )
    events: list[DriverEvent] = []
    with anyio.fail_after(30):
        async with listener, anyio.create_task_group() as tg:
            tg.start_soon(listener.serve, hold)
            async with anyio.create_task_group() as turn:

                async def run_turn() -> None:
                    async for event in driver.run_turn(make_request()):
                        events.append(event)

                turn.start_soon(run_turn)
                await request_sent.wait()  # the CLI is now waiting on the model: mid-turn
                assert cli_children() != []
                turn.cancel_scope.cancel()
                stop_began = anyio.current_time()
            stop_took = anyio.current_time() - stop_began
            tg.cancel_scope.cancel()

    assert events == []
    assert cli_children() == []
    # Not a benchmark: without the interrupt, the SDK waits its 5 s grace and then SIGTERMs,
    # which would also leave no process. The deadline tells the two apart.
    assert stop_took < SDK_GRACE_S


# A CLI process that answers one turn, then, before it exits, leaves a grandchild holding its
# stdout and stderr: the pipes then reach end-of-file only when that grandchild ends.
LINGERING_CLI = """\
import json, subprocess, sys
def out(obj):
    print(json.dumps(obj), flush=True)
for line in sys.stdin:
    message = json.loads(line)
    if message.get("type") == "control_request":
        out({"type": "control_response", "response": {"subtype": "success",
             "request_id": message["request_id"],
             "response": {"hook_on_failure_supported": True}}})
    elif message.get("type") == "user":
        out({"type": "assistant", "message": {"model": "claude-test", "role": "assistant",
             "content": [{"type": "text", "text": "done"}]}})
        out({"type": "result", "subtype": "success", "duration_ms": 1, "duration_api_ms": 1,
             "is_error": False, "num_turns": 1, "session_id": "s", "total_cost_usd": 0.0,
             "usage": {"input_tokens": 1, "output_tokens": 1}})
subprocess.Popen(["sleep", "30"], start_new_session=True)  # inherits stdout and stderr
"""


async def test_a_turn_leaves_no_pipe_of_its_cli_open(
    make_request: Any, tmp_path: Path, anyio_backend: str
) -> None:
    """The SDK ends the CLI process but leaves its stdout and stderr pipes to close at their
    end-of-file; on asyncio a loop that ends first leaves them to the garbage collector (the
    ResourceWarnings that failed the suite under load). The driver closes them itself."""
    import asyncio
    import gc
    import sys

    cli = tmp_path / "claude"
    cli.write_text(f"#!{sys.executable}\n{LINGERING_CLI}", encoding="utf-8")
    cli.chmod(0o700)
    with anyio.fail_after(30):
        events = [e async for e in ClaudeDriver(cli_path=str(cli)).run_turn(make_request())]
    assert events and not isinstance(events[-1], ErrorEvent), events
    if anyio_backend == "asyncio":
        gc.collect()
        open_transports = [
            obj
            for obj in gc.get_objects()
            if isinstance(obj, asyncio.SubprocessTransport) and not obj.is_closing()
        ]
        assert open_transports == []
