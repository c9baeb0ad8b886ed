"""The team as an MCP server for an agent outside it (`mnemara mcp -t TEAM --as NAME`).

The agent is a participant of the team's bus that the team file admits by name
(`[team.external.NAME]`): it sends to the panels it may write to, and claims, reads and
acknowledges its own messages with the same leases, receipts, idempotency keys and dead
letters as a panel's. It is never the operator: no operator route, no approvals.

Rooms: rules (what the agent may send, pure), participant (its bus calls), views (status and
events from host.sqlite), tools (the MCP tools and their schemas), server (the `mcp` SDK's
low-level server), transports (stdio; streamable HTTP behind panels/access.py's checks).
Only this package imports `mcp`; the CLI imports it only when `mnemara mcp` runs.
"""

from __future__ import annotations

import socket
from collections.abc import Callable
from contextlib import AsyncExitStack

from panels.team import TeamSpec


async def serve_team(
    team: TeamSpec,
    name: str,
    *,
    sock: socket.socket | None = None,
    token: str | None = None,
    ready: Callable[[str], None] = lambda where: None,
) -> None:
    """Serve `team` to one MCP client over stdio (`sock` None), or to any over HTTP on `sock`,
    as the external agent `name` (admitted by the team file), until the client or an
    interrupt ends it."""
    from panels.access import is_loopback
    from panels.mcp.participant import open_participant
    from panels.mcp.rules import admit
    from panels.mcp.server import build_server
    from panels.mcp.tools import Toolbox
    from panels.mcp.transports import serve_http, serve_stdio, url_of
    from panels.mcp.views import TeamPlace
    from peerbus import BusOptions, open_bus

    options = BusOptions()
    if team.silent_types is not None:
        options = BusOptions(silent_types=frozenset(team.silent_types))
    if team.bus_file is not None:
        team.bus_file.parent.mkdir(parents=True, exist_ok=True)  # the host would make it too
    async with AsyncExitStack() as stack:
        bus = await stack.enter_async_context(open_bus(team.bus, options=options))
        admission = admit(team.external[name], team.panels, bus.options)
        participant = await stack.enter_async_context(open_participant(bus, admission))
        place = TeamPlace(team.name, team.state_dir, team.bus)
        server = build_server(Toolbox(participant, place), team.name)
        if sock is None:
            ready("stdio")
            await serve_stdio(server)
        else:
            loopback = is_loopback(sock.getsockname()[0])
            ready(url_of(sock))
            await serve_http(server, sock, loopback=loopback, token=token)
