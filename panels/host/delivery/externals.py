"""Agents outside the team on its bus (`[team.external.<name>]`, reached through `mnemara mcp`).

Each is a recipient like a panel: what a panel sends it is kept on the bus under its name,
with the same receipts, leases and dead letters, until it claims and acknowledges it. It is
registered by the host as the host starts and by `mnemara mcp` as it starts (whichever comes
first; either may run without the other). It hears direct messages only, never broadcasts:
a broadcast stays open until every registered recipient that hears it is done with it, and
an agent that is away for days must not keep the team's broadcasts open.

Registering keeps the recipient's epoch (it is not a restart of anything). The host's
registration leaves the agent's leases alone (a host that starts or restarts is not the
agent's consumer: a running server's claims stay its own until it acks them); the server's
own, as it starts, gives back at once what an earlier server of that name held claimed: it
comes again on the next `inbox`. One `mnemara mcp` per name at a time, then.
"""

from __future__ import annotations

from collections.abc import Iterable

from peerbus import BusBackend

HEARS = ()  # the senders whose broadcasts an external agent takes: none


async def register_externals(
    bus: BusBackend, names: Iterable[str], *, consumer: bool = False
) -> None:
    """Make each external agent named known on `bus`, keeping its epoch. The host leaves
    what the agent holds claimed alone; its `consumer` (the server serving it, starting)
    takes back what an earlier one held."""
    for name in names:
        await bus.register(name, senders=HEARS, epoch=1, release=consumer)
