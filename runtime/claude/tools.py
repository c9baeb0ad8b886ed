"""The MCP servers a turn offers the model: our in-process tools as one SDK server, plus stdio ones.

Every `ToolSpec` of a turn is served by one in-process SDK MCP server named `mnemara`, so the
model sees it as `mcp__mnemara__<name>`. A handler that raises becomes an error result the
model can read; it never fails the turn. The server holds only each tool's name, description
and schema: a call goes to `call(name, arguments)`, the binding of the turn the CLI process
serves (binding.py), so a process started before its turn runs that turn's handlers.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from runtime.turn.driver import SDK_SERVER_NAME, McpServerSpec, ToolOutput, ToolSpec

if TYPE_CHECKING:
    from claude_agent_sdk import McpServerConfig, SdkMcpTool

# How a tool call reaches its handler: (the spec's name, the arguments) -> its output.
ToolCaller = Callable[[str, dict[str, Any]], Awaitable[ToolOutput]]


def _input_schema(schema: dict[str, Any]) -> dict[str, Any]:
    # The SDK passes a dict through as JSON Schema only when it has both "type" and
    # "properties"; anything else it reads as a {name: python_type} map.
    if isinstance(schema.get("type"), str) and "properties" in schema:
        return schema
    return {"type": "object", "properties": {}, **schema}


def sdk_tool(spec: ToolSpec, call: ToolCaller) -> SdkMcpTool[Any]:
    from claude_agent_sdk import SdkMcpTool

    async def handler(arguments: dict[str, Any]) -> dict[str, Any]:
        output = await call(spec.name, arguments)
        return {"content": [{"type": "text", "text": output.text}], "is_error": output.is_error}

    return SdkMcpTool(
        name=spec.name,
        description=spec.description,
        input_schema=_input_schema(spec.input_schema),
        handler=handler,
    )


def _stdio_server(spec: McpServerSpec) -> McpServerConfig:
    return {
        "type": "stdio",
        "command": spec.command,
        "args": list(spec.args),
        "env": dict(spec.env),
    }


def build_mcp_servers(
    sdk_tools: tuple[ToolSpec, ...], stdio: tuple[McpServerSpec, ...], call: ToolCaller
) -> dict[str, McpServerConfig]:
    """The `mcp_servers` option: stdio servers by name, then our SDK server (if any tools)."""
    from claude_agent_sdk import create_sdk_mcp_server

    servers: dict[str, McpServerConfig] = {}
    for spec in stdio:
        if spec.name == SDK_SERVER_NAME or spec.name in servers:
            raise ValueError(f"MCP server name {spec.name!r} is used twice (or is reserved)")
        servers[spec.name] = _stdio_server(spec)
    if sdk_tools:
        servers[SDK_SERVER_NAME] = create_sdk_mcp_server(
            SDK_SERVER_NAME, tools=[sdk_tool(spec, call) for spec in sdk_tools]
        )
    return servers
