"""Agents outside the team on its bus (`[team.external.<name>]`, reached through `mnemara mcp`).

Each is a recipient like a panel: what a panel sends it is kept on the bus under its name,
with the same receipts, leases and dead letters, until it claims and acknowledges it. It is
registered by the host as the host starts and by `mnemara mcp` as it starts (whichever comes
first; either may run without the other). It hears direct messages only, never broadcasts:
a broadcast stays open until every registered recipient that hears it is done with it, and
an agent that is away for days must not keep the team's broadcasts open.

Registering keeps the recipient's epoch (it is not a restart of anything), but it gives back
at once the messages an earlier server of that name held claimed: they come again on the
next `inbox`. One `mnemara mcp` per name at a time, then.
"""

from __future__ import annotations

from collections.abc import Iterable

from peerbus import BusBackend

HEARS = ()  # the senders whose broadcasts an external agent takes: none


async def register_externals(bus: BusBackend, names: Iterable[str]) -> None:
    """Register each external agent named on `bus`, keeping its epoch."""
    for name in names:
        await bus.register(name, senders=HEARS, epoch=1)
