"""A decision's result (`Verdict`) and how tool names are read (MCP servers, our own tools)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Action = Literal["allow", "ask", "deny"]

OWN_SERVER = "mnemara"


@dataclass(frozen=True)
class Verdict:
    """The decision on one call. `remember` is what an "always" answer may store (exact
    targets); it is empty when the call may not be remembered."""

    action: Action
    tool: str
    reason: str
    target: str = ""
    remember: tuple[str, ...] = ()


def mcp_server_of(tool: str) -> str | None:
    """`server` for `mcp__server__tool`, else None."""
    if not tool.startswith("mcp__"):
        return None
    server, sep, rest = tool[5:].partition("__")
    return server if sep and server and rest else None
