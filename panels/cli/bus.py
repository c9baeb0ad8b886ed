"""`mnemara bus`: send, read and repair messages on a team's bus from a shell or a script.

peerbus is imported inside the commands so `mnemara --help` stays fast. Every command takes
`--db FILE|URL` (SQLite or PostgreSQL) or `--team/-t NAME` and prints JSON with `--json`.
Recipients are panels (`--panel/-p`); the old spellings (`--to`, `--role`, `--recipient`,
`bus inbox NAME`) still work. Payloads and roles read from the bus are untrusted text:
control characters are stripped before they reach the terminal. Errors are one line on
stderr and an exit code (panels/cli/errors.py), never a traceback.
"""

from __future__ import annotations

import re
import sys
from typing import TYPE_CHECKING, Annotated

import typer

from panels.cli import busmigrate
from panels.cli.busio import (
    DbOpt,
    JsonOpt,
    LimitOpt,
    TeamOpt,
    clean,
    emit,
    one_of,
    plain,
    record_line,
    with_bus,
)
from panels.cli.errors import EXIT_USAGE, fail, reports_errors
from panels.cli.lazy import Group
from panels.cli.options import HELP_OPTIONS, Command, not_negative

bus_app = typer.Typer(
    cls=Group,
    help="Send, inspect and repair messages on a team's peer bus (the `returns` table).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings=HELP_OPTIONS,
)

if TYPE_CHECKING:
    from peerbus import BusBackend, Pending

_DURATION = re.compile(r"(\d+(?:\.\d+)?)([smhd]?)")


def _tries(item: dict[str, object]) -> str:
    """How often a message was handed out, and how many of its turns failed (only those
    count toward a dead letter; a delivery cut off by a crash does not)."""
    failed = f", {item['attempts']} failed" if item["attempts"] else ""
    return f"(delivered {item['deliveries']}x{failed})"


@bus_app.command(cls=Command)
@reports_errors
def send(
    payload: Annotated[
        str, typer.Argument(metavar="JSON", help="The payload: a JSON object, or - for stdin.")
    ],
    db: DbOpt = None,
    team: TeamOpt = None,
    panel: Annotated[
        str | None,
        typer.Option(
            "--panel", "-p", "--to", metavar="NAME", help="The panel it is for; omit to broadcast."
        ),
    ] = None,
    sender: Annotated[
        str, typer.Option("--from", metavar="NAME", help="The sender recorded on the row.")
    ] = "operator",
    topic: Annotated[
        str | None, typer.Option("--topic", metavar="TEXT", help="Topic (task_id).")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Submit one message. The sender is --from (default `operator`), never the payload."""
    from sqlitekit.jsonload import JsonLimitError, load_json

    text = sys.stdin.read() if payload == "-" else payload
    try:
        value = load_json(text)
    except JsonLimitError as exc:
        raise fail(
            f"the payload is refused ({exc}); send a flatter JSON object", EXIT_USAGE
        ) from None
    except ValueError as exc:
        raise fail(f"the payload is not JSON ({exc}); give a JSON object", EXIT_USAGE) from None
    ident = with_bus(
        db, team, lambda bus: bus.submit(sender, panel, value, topic=topic), create=True
    )
    emit({"id": ident}, as_json, lambda d: f"sent message {d['id']}")


@bus_app.command(cls=Command)
@reports_errors
def inbox(
    recipient: Annotated[
        str | None, typer.Argument(metavar="PANEL", help="The panel (or use --panel).")
    ] = None,
    db: DbOpt = None,
    team: TeamOpt = None,
    panel: Annotated[
        str | None,
        typer.Option("--panel", "-p", metavar="NAME", help="The panel whose inbox to list."),
    ] = None,
    senders: Annotated[
        str | None,
        typer.Option(
            "--senders", metavar="NAMES", help="Comma-separated panels whose broadcasts it takes."
        ),
    ] = None,
    limit: LimitOpt = 100,
    as_json: JsonOpt = False,
) -> None:
    """List what a panel is still owed, oldest first, without claiming anything.

    Operator input waiting for the panel (its route NAME@operator) is listed first, marked.
    """
    from panels.host.delivery.feed import operator_route

    name = one_of(panel, recipient, "PANEL")
    if name is None:
        raise fail("name the panel: `mnemara bus inbox --panel NAME`", EXIT_USAGE)
    roles = None if senders is None else [s for s in senders.split(",") if s.strip()]

    async def read(bus: BusBackend) -> tuple[list[Pending], list[Pending]]:
        operator = await bus.inbox(operator_route(name), senders=[], limit=limit)
        return operator, await bus.inbox(name, senders=roles, limit=limit)

    operator, peers = with_bus(db, team, read, inspect=True)
    items = [{**plain(p), "operator_input": True} for p in operator] + [
        {**plain(p), "operator_input": False} for p in peers
    ]
    emit(
        items[:limit] if limit else [],
        as_json,
        lambda p: (
            f"{p['id']:>7} {p['state']:<7} {_tries(p)} {clean(p['sender'], 24)}"
            + (" (operator input)" if p["operator_input"] else "")
            + ": "
            + clean(p["payload_json"], 120)
        ),
        empty=f"(nothing waits for {name})",
    )


@bus_app.command(cls=Command)
@reports_errors
def tail(
    db: DbOpt = None,
    team: TeamOpt = None,
    limit: Annotated[
        int,
        typer.Option(
            "--limit", "-n", metavar="N", callback=not_negative, help="Show the newest N rows."
        ),
    ] = 20,
    after: Annotated[
        int | None,
        typer.Option(
            "--after",
            metavar="ID",
            callback=not_negative,
            help="Instead, start with the rows after this id.",
        ),
    ] = None,
    panel: Annotated[
        str | None,
        typer.Option(
            "--panel", "-p", "--role", metavar="NAME", help="Only rows sent by or to this panel."
        ),
    ] = None,
    follow: Annotated[bool, typer.Option("--follow", "-f", help="Keep printing new rows.")] = False,
    count: Annotated[
        int | None,
        typer.Option(
            "--count",
            metavar="N",
            callback=not_negative,
            help="With --follow: stop after N rows printed.",
        ),
    ] = None,
    timeout: Annotated[
        float | None,
        typer.Option(
            "--timeout",
            metavar="SECONDS",
            callback=not_negative,
            help="With --follow: stop after this many seconds.",
        ),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Print the newest rows; with --follow, print new ones as they arrive (JSON lines)."""

    async def show(bus: BusBackend) -> None:
        import anyio

        start = after
        if start is None:
            rows = await bus.history(limit=limit, role=panel) if limit else []
            newest = await bus.history(limit=1)
            start = newest[-1].id if newest else 0
        else:
            rows = await bus.history(after=start, limit=500, role=panel)
        for row in rows:
            emit(row, as_json, record_line)
            start = max(start, row.id)
        if not rows and not follow and not as_json:
            typer.echo("(no messages on this bus yet)" if limit else "(nothing asked for: -n 0)")
        if follow and (count is None or len(rows) < count):
            left = None if count is None else count - len(rows)
            with anyio.move_on_after(timeout):
                await _follow(bus, start, panel, left, as_json)

    with_bus(db, team, show, inspect=True)


async def _follow(
    bus: BusBackend, last: int, role: str | None, count: int | None, as_json: bool
) -> None:
    while True:
        # Taken before the read: a row committed during it still wakes the wait.
        since = await bus.generation()
        for row in await bus.history(after=last, limit=500, role=role):
            emit(row, as_json, record_line)
            last = row.id
            if count is not None:
                count -= 1
                if count <= 0:
                    return
        await bus.wait_for_change(3600, since=since)


@bus_app.command(cls=Command)
@reports_errors
def stats(db: DbOpt = None, team: TeamOpt = None, as_json: JsonOpt = False) -> None:
    """Rows by status, and per recipient: epoch, waiting, leased, done, failed, noise."""
    result = with_bus(db, team, lambda bus: bus.stats(), inspect=True)
    if as_json:
        emit(result, True, str)
        return
    typer.echo(f"mode {result.mode}, schema v{result.schema_version}")
    if not result.rows_by_status:
        typer.echo("(no messages on this bus yet)")
    for status, count in sorted(result.rows_by_status.items()):
        typer.echo(f"  {clean(status, 20):<10} {count}")
    for r in result.recipients:
        typer.echo(
            f"{clean(r.recipient, 30)} epoch {r.epoch}: waiting {r.waiting}, leased {r.leased}, "
            f"done {r.done}, failed {r.failed}, noise acked {r.noise_acked}"
        )


@bus_app.command(cls=Command)
@reports_errors
def dead(
    db: DbOpt = None,
    team: TeamOpt = None,
    panel: Annotated[
        str | None,
        typer.Option(
            "--panel", "-p", "--recipient", metavar="NAME", help="Only this panel's dead letters."
        ),
    ] = None,
    limit: LimitOpt = 100,
    as_json: JsonOpt = False,
) -> None:
    """List dead letters: messages given up for a panel, with the reason."""
    items = (
        with_bus(db, team, lambda bus: bus.dead_letters(recipient=panel, limit=limit))
        if limit
        else []
    )
    emit(
        items,
        as_json,
        lambda d: (
            f"{d.id:>7} for {clean(d.recipient, 24)} from {clean(d.sender, 24)}: "
            f"{clean(d.reason, 100)}"
        ),
        empty="(no dead letters)",
    )


@bus_app.command(cls=Command)
@reports_errors
def retry(
    ids: Annotated[
        list[int] | None, typer.Argument(metavar="ID", help="Message ids to retry.")
    ] = None,
    db: DbOpt = None,
    team: TeamOpt = None,
    panel: Annotated[
        str | None,
        typer.Option(
            "--panel",
            "-p",
            "--recipient",
            metavar="NAME",
            help="Retry this panel's dead letters.",
        ),
    ] = None,
    all_: Annotated[bool, typer.Option("--all", help="Retry every dead letter.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Put dead letters back in the queue with a fresh attempt count."""
    if not ids and panel is None and not all_:
        raise fail("name message ids, --panel NAME, or --all", EXIT_USAGE)
    if ids and any(i < 1 for i in ids):
        raise fail("message ids are 1 or more", EXIT_USAGE)
    moved = with_bus(db, team, lambda bus: bus.retry(ids=ids or None, recipient=panel))
    emit({"retried": moved}, as_json, lambda d: f"retried {d['retried']} dead letter(s)")


def parse_duration(text: str) -> float:
    """Seconds from `90`, `90s`, `15m`, `12h` or `7d`."""
    match = _DURATION.fullmatch(text.strip())
    if not match:
        raise fail(f"cannot read duration {text!r}: use e.g. 90s, 15m, 12h or 7d", EXIT_USAGE)
    unit = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}[match.group(2)]
    return float(match.group(1)) * unit


@bus_app.command(cls=Command)
@reports_errors
def prune(
    db: DbOpt = None,
    team: TeamOpt = None,
    older_than: Annotated[
        str,
        typer.Option(
            "--older-than",
            metavar="AGE",
            help="Delete done rows older than this: 90s, 15m, 12h or 7d.",
        ),
    ] = "7d",
    as_json: JsonOpt = False,
) -> None:
    """Delete done rows older than --older-than. Pending rows and dead letters are kept."""
    seconds = parse_duration(older_than)
    deleted = with_bus(db, team, lambda bus: bus.prune(older_than=seconds))
    emit({"deleted": deleted}, as_json, lambda d: f"deleted {d['deleted']} done row(s)")


bus_app.command(cls=Command)(busmigrate.migrate)
