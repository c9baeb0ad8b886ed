"""`mnemara bus migrate`: a whole bus copied to another place or backend.

Registered on `mnemara bus` by panels/cli/bus.py. The source is only read; the copy is
exported again and compared before it is reported, so a half copy is never called done.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from panels.cli.busio import JsonOpt, TeamOpt, emit, with_bus
from panels.cli.errors import EXIT_BUS, EXIT_USAGE, fail, reports_errors

if TYPE_CHECKING:
    from peerbus import BusBackend


@reports_errors
def migrate(
    target: Annotated[
        str,
        typer.Option(
            "--to",
            metavar="FILE|URL",
            help="Where to copy it: a new SQLite file, or an empty postgresql:// database.",
        ),
    ],
    source: Annotated[
        str | None,
        typer.Option("--from", metavar="FILE|URL", help="The bus to copy: a SQLite file or a URL."),
    ] = None,
    team: TeamOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Copy a whole bus (--from, or a team's with --team) to another place or backend:
    messages with their ids, receipts, leases, dead letters, sent keys and the bus
    identity, so no panel sees a message twice.

    Stop the team's host first: what is sent during the copy stays behind. The source is
    only read; the target must hold no messages yet. Then point the team file's `bus` at
    the target.
    """
    from peerbus import BusDump, parse_location, redact

    async def read(bus: BusBackend) -> BusDump:
        return await bus.export_dump()

    if (source is None) == (team is None):
        raise fail("give exactly one of --from FILE|URL or --team NAME", EXIT_USAGE)
    if source is not None and parse_location(source) == parse_location(target):
        raise fail("--from and --to name the same bus", EXIT_USAGE)
    whole = with_bus(source, team, read, inspect=True)

    async def write(bus: BusBackend) -> BusDump:
        await bus.import_dump(whole)
        return await bus.export_dump()

    copied = with_bus(target, None, write, create=True)
    if copied.summary() != whole.summary() or copied.bus_id != whole.bus_id:
        raise fail(
            f"the copy at {redact(target)} does not match: {copied.summary()} against "
            f"{whole.summary()}; do not use it",
            EXIT_BUS,
        )
    origin = redact(source) if source is not None else f"team {team}"
    emit(
        {"from": origin, "to": redact(target), "copied": whole.summary()},
        as_json,
        lambda d: f"copied {d['copied']} from {d['from']} to {d['to']}",
    )
