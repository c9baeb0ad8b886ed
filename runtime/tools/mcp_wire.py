"""MCP wire-through: the config's stdio servers as the turn hands them to the SDK.

Each server is started through `mcp_stderr.py`, a small stdlib-only wrapper that passes the
MCP stdio stream through untouched, copies the server's stderr through to the CLI, and writes
a `debug.log` record (kind "error") with the last lines of that stderr when the server cannot
be started or exits with a failure on its own. The CLI already goes on without a server that
failed, so the panel keeps working; the record says why the server's tools are missing.

Tool names stay `mcp__<server>__<tool>`: the server's name is unchanged, only its command is.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from runtime.instance.config import McpServer
from runtime.turn.driver import McpServerSpec

WRAPPER = Path(__file__).with_name("mcp_stderr.py")


def stdio_servers(servers: Sequence[McpServer], debug_log: Path) -> tuple[McpServerSpec, ...]:
    """The turn's `mcp_servers`, each wrapped so its failures reach `debug_log`."""
    return tuple(
        McpServerSpec(
            name=s.name,
            # -I: the wrapper needs nothing but the standard library, so it ignores
            # PYTHONPATH and user site-packages; the server itself gets the environment as is.
            command=sys.executable,
            args=(
                "-I",
                str(WRAPPER),
                "--log",
                str(debug_log),
                "--server",
                s.name,
                "--",
                s.command,
                *s.args,
            ),
            env=dict(s.env),
        )
        for s in servers
    )
