"""A warm spare: the next turn's CLI process, started and initialised before the turn exists.

A turn's process is shaped by everything but its prompt: the system prompt (the role doc),
the model, the tool list, the MCP servers, the budget caps, the environment, the working
directory, the sandbox. A spare is built from a `TurnRequest` with no blocks (the session's
`spare_request`, computed exactly as its next turn's request would be) and is connected:
sandbox, relay and CLI started, the SDK's initialize answered, the CLI waiting on stdin for
its one user message. The next turn takes it only when `fingerprint` of its own request,
computed the same way, is equal; otherwise the spare is discarded and the turn starts fresh.
The role doc is still read at every turn; only its bytes' equality decides.

A spare holds no message, no lease, no turn row: killing it loses nothing, and one that died
while waiting is found dead when taken and discarded.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import AsyncIterator, Mapping
from contextlib import ExitStack
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc

from runtime.claude.binding import Binding
from runtime.turn.driver import TurnRequest
from runtime.window.rows import Block

if TYPE_CHECKING:
    from claude_agent_sdk import ClaudeSDKClient


def fingerprint(request: TurnRequest, driver: Mapping[str, Any]) -> str:
    """A digest of everything that shapes the CLI process of a turn of `request` (not its
    prompt), with `driver`'s own facts (CLI path, environment, sandbox), the host's
    environment the SDK passes on to the CLI, and the facts of the moment the CLI states."""
    shape = {
        "system": request.system,
        "model": request.model,
        "native_tools": list(request.native_tools),
        "sdk_tools": [[t.name, t.description, t.input_schema] for t in request.sdk_tools],
        "mcp_servers": [[m.name, m.command, list(m.args), m.env] for m in request.mcp_servers],
        "max_budget_usd": request.max_budget_usd,
        "max_turns": request.max_turns,
        "bash_timeout_seconds": request.bash_timeout_seconds,
        "env": request.env,
        "cwd": str(request.cwd),
        "spare_key": request.spare_key,
        "driver": dict(driver),
        "environ": dict(os.environ),
        # What the CLI says of the moment in its first message ("Today's date is ...", "Is
        # a git repository: ..."): a fresh process would say it as of the turn.
        "day": datetime.now().astimezone().date().isoformat(),
        "git": in_git_repository(request.cwd),
    }
    text = json.dumps(shape, sort_keys=True, default=repr, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def in_git_repository(cwd: Path) -> bool:
    """Whether `cwd` is inside a git working tree, as the CLI reports it in its environment
    note: a `.git` with a HEAD in it or above (or a `.git` file, a linked worktree). The
    sandbox's empty `.git` stand-in (runtime/sandbox/placeholders.py), there while a spare
    or a turn runs, is no repository."""
    here = Path(os.path.abspath(cwd))
    for folder in (here, *here.parents):
        marker = folder / ".git"
        if marker.is_file() or (marker / "HEAD").exists():
            return True
    return False


class PromptSlot:
    """The prompt stream a spare connects with: it yields one user message once the turn
    gives its blocks, or ends with nothing when the spare is discarded (the SDK then closes
    the CLI's stdin and the CLI exits)."""

    def __init__(self) -> None:
        send, receive = anyio.create_memory_object_stream[tuple[Block, ...]](1)
        self._send = send
        self._receive = receive

    async def stream(self) -> AsyncIterator[dict[str, Any]]:
        with self._receive:
            try:
                blocks = await self._receive.receive()
            except (anyio.EndOfStream, anyio.ClosedResourceError):
                return  # discarded: nothing is sent
        yield {
            "type": "user",
            "session_id": "",
            "message": {"role": "user", "content": list(blocks)},
            "parent_tool_use_id": None,
        }

    def give(self, blocks: tuple[Block, ...]) -> None:
        with self._send:
            self._send.send_nowait(blocks)

    def close(self) -> None:
        """End the stream with nothing sent. Both ends: a stream the SDK never started to
        read (a spare discarded as it connected) must not be left open to the collector."""
        self._send.close()
        self._receive.close()


@dataclass
class Spare:
    """A connected client waiting for its prompt, and what it was built from."""

    fingerprint: str
    client: ClaudeSDKClient
    binding: Binding
    slot: PromptSlot
    resources: ExitStack  # the sandbox's per-turn directory and gateway, when confined

    def alive(self) -> bool:
        """Whether the CLI process is still running (a custom transport: assumed so)."""
        process = cli_process(self.client)
        return process is None or process.returncode is None

    def pids(self) -> tuple[int, ...]:
        process = cli_process(self.client)
        return () if process is None else (process.pid,)


def cli_process(client: ClaudeSDKClient) -> anyio.abc.Process | None:
    """The CLI's process as the SDK's own subprocess transport holds it, else None (a custom
    transport). Private attributes of claude-agent-sdk 0.2.189-0.2.190, read defensively: a
    release that renames them makes this None, and only the pipes' early close is lost
    (tests/runtime/claude/test_claude_real_cli.py, the lingering-CLI test, then fails)."""
    process = getattr(getattr(client, "_transport", None), "_process", None)
    return process if isinstance(process, anyio.abc.Process) else None
