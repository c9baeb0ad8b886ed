"""`mnemara bus`: send, read and repair messages on a team's bus from a shell or a script.

peerbus is imported inside the commands so `mnemara --help` stays fast. Every command
takes `--db PATH` or `--team NAME` and prints JSON with `--json`. Payloads and roles read
from the bus are untrusted text: control characters are stripped before they reach the
terminal. Errors are one line on stderr and a non-zero exit code, never a traceback.
"""

from __future__ import annotations

import dataclasses
import json
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

if TYPE_CHECKING:
    from peerbus import BusFile

bus_app = typer.Typer(
    help="Send, inspect and repair messages on a team's peer bus (the `returns` table).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

EXIT_USAGE = 2
EXIT_BUS = 9  # PeerbusError, as in the CLI's error table
_TEAM = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
_DURATION = re.compile(r"(\d+(?:\.\d+)?)([smhd]?)")

DbOpt = Annotated[
    Path | None, typer.Option("--db", help="Path of the bus SQLite file.", dir_okay=False)
]
TeamOpt = Annotated[
    str | None,
    typer.Option("--team", help="Team name: uses $MNEMARA_HOME/_teams/NAME/bus.sqlite."),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON instead of text.")]


def _fail(message: str, code: int) -> typer.Exit:
    typer.echo(f"mnemara: {message}", err=True)
    return typer.Exit(code)


def resolve_path(db: Path | None, team: str | None) -> Path:
    """The bus file named by --db or --team (exactly one)."""
    if (db is None) == (team is None):
        raise _fail("give exactly one of --db PATH or --team NAME", EXIT_USAGE)
    if db is not None:
        return db
    assert team is not None
    if not _TEAM.fullmatch(team) or ".." in team:
        raise _fail(f"invalid team name {team!r}: use letters, digits, '.', '-', '_'", EXIT_USAGE)
    from runtime.home import mnemara_home

    return mnemara_home() / "_teams" / team / "bus.sqlite"


@contextmanager
def opened(db: Path | None, team: str | None, *, create: bool = False) -> Iterator[BusFile]:
    """Open the bus for one command; peerbus errors become a line on stderr and exit 9."""
    from peerbus import PeerbusError, close_bus, connect_bus

    path = resolve_path(db, team)
    if not create and not path.is_file():
        raise _fail(f"no bus at {path}; check --db / --team, or send a message first", EXIT_BUS)
    if not path.parent.is_dir():
        raise _fail(f"directory {path.parent} does not exist; create it first", EXIT_BUS)
    try:
        bus = connect_bus(path)
    except PeerbusError as exc:
        raise _fail(str(exc), EXIT_BUS) from None
    if bus.notice:
        typer.echo(f"mnemara: note: {bus.notice}", err=True)
    try:
        yield bus
    except PeerbusError as exc:
        raise _fail(str(exc), EXIT_BUS) from None
    finally:
        close_bus(bus)


def _clean(text: object, limit: int | None = None) -> str:
    from peerbus.render import strip_controls

    one_line = " ".join(strip_controls(str(text)).split())
    return one_line if limit is None or len(one_line) <= limit else one_line[: limit - 1] + "…"


def _emit(items: Any, as_json: bool, line: Any) -> None:
    if as_json:
        typer.echo(json.dumps(_plain(items), ensure_ascii=False, sort_keys=True))
        return
    for item in items if isinstance(items, list) else [items]:
        typer.echo(line(item))


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _record_line(r: Any) -> str:
    to = r.recipient or "*"
    topic = f" [{_clean(r.topic, 40)}]" if r.topic else ""
    return f"{r.id:>7} {r.status:<8} {_clean(r.sender, 24)} -> {_clean(to, 24)}{topic} " + _clean(
        r.payload_json, 120
    )


@bus_app.command()
def send(
    payload: Annotated[str, typer.Argument(help="The payload: a JSON object, or - for stdin.")],
    db: DbOpt = None,
    team: TeamOpt = None,
    to: Annotated[
        str | None, typer.Option("--to", help="Recipient role; omit for a broadcast.")
    ] = None,
    sender: Annotated[
        str, typer.Option("--from", help="Sender role recorded on the row.")
    ] = "operator",
    topic: Annotated[str | None, typer.Option("--topic", help="Topic (task_id).")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Submit one message. The sender is --from (default `operator`), never the payload."""
    text = sys.stdin.read() if payload == "-" else payload
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise _fail(f"the payload is not JSON ({exc})", EXIT_USAGE) from None
    from peerbus import submit

    with opened(db, team, create=True) as bus:
        ident = submit(bus, sender, to, value, topic=topic)
    _emit({"id": ident}, as_json, lambda d: f"sent message {d['id']}")


@bus_app.command()
def inbox(
    recipient: Annotated[str, typer.Argument(help="The recipient role to look at.")],
    db: DbOpt = None,
    team: TeamOpt = None,
    senders: Annotated[
        str | None,
        typer.Option("--senders", help="Comma-separated roles whose broadcasts it takes."),
    ] = None,
    limit: Annotated[int, typer.Option(help="At most this many messages.")] = 100,
    as_json: JsonOpt = False,
) -> None:
    """List what RECIPIENT is still owed, oldest first, without claiming anything."""
    from peerbus import inbox as read_inbox

    roles = None if senders is None else [s for s in senders.split(",") if s.strip()]
    with opened(db, team) as bus:
        items = read_inbox(bus, recipient, senders=roles, limit=limit)
    _emit(
        items,
        as_json,
        lambda p: (
            f"{p.id:>7} {p.state:<7} x{p.attempts} {_clean(p.sender, 24)}: "
            + _clean(p.payload_json, 120)
        ),
    )


@bus_app.command()
def tail(
    db: DbOpt = None,
    team: TeamOpt = None,
    limit: Annotated[int, typer.Option(help="Show the newest N rows first.")] = 20,
    after: Annotated[
        int | None, typer.Option("--after", help="Instead, start with the rows after this id.")
    ] = None,
    role: Annotated[
        str | None, typer.Option("--role", help="Only rows sent by or to this role.")
    ] = None,
    follow: Annotated[bool, typer.Option("--follow", "-f", help="Keep printing new rows.")] = False,
    count: Annotated[
        int | None, typer.Option("--count", help="With --follow: stop after N rows printed.")
    ] = None,
    timeout: Annotated[
        float | None, typer.Option("--timeout", help="With --follow: stop after N seconds.")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Print the newest rows; with --follow, print new ones as they arrive (JSON lines)."""
    import anyio

    from peerbus import history

    with opened(db, team) as bus:
        if after is None:
            rows = history(bus, limit=limit, role=role)
            newest = history(bus, limit=1)
            after = newest[-1].id if newest else 0
        else:
            rows = history(bus, after=after, limit=500, role=role)
    printed = 0
    for row in rows:
        _emit(row, as_json, _record_line)
        after = max(after, row.id)
        printed += 1
    if follow and (count is None or printed < count):
        left = None if count is None else count - printed
        path, start = resolve_path(db, team), after

        async def follow_until_timeout() -> None:
            with anyio.move_on_after(timeout):
                await _follow(path, start, role, left, as_json)

        anyio.run(follow_until_timeout)


async def _follow(
    path: Path,
    last: int,
    role: str | None,
    count: int | None,
    as_json: bool,
) -> None:
    from peerbus import open_bus

    async with open_bus(path) as bus:
        while True:
            # Taken before the read: a row committed during it still wakes the wait.
            since = await bus.generation()
            for row in await bus.history(after=last, limit=500, role=role):
                _emit(row, as_json, _record_line)
                last = row.id
                if count is not None:
                    count -= 1
                    if count <= 0:
                        return
            await bus.wait_for_change(3600, since=since)


@bus_app.command()
def stats(db: DbOpt = None, team: TeamOpt = None, as_json: JsonOpt = False) -> None:
    """Rows by status, and per recipient: epoch, waiting, leased, done, failed, noise."""
    from peerbus import stats as read_stats

    with opened(db, team) as bus:
        result = read_stats(bus)
    if as_json:
        _emit(result, True, str)
        return
    typer.echo(f"mode {result.mode}, schema v{result.schema_version}")
    for status, count in sorted(result.rows_by_status.items()):
        typer.echo(f"  {_clean(status, 20):<10} {count}")
    for r in result.recipients:
        typer.echo(
            f"{_clean(r.recipient, 30)} epoch {r.epoch}: waiting {r.waiting}, leased {r.leased}, "
            f"done {r.done}, failed {r.failed}, noise acked {r.noise_acked}"
        )


@bus_app.command()
def dead(
    db: DbOpt = None,
    team: TeamOpt = None,
    recipient: Annotated[
        str | None, typer.Option("--recipient", help="Only this recipient's.")
    ] = None,
    limit: Annotated[int, typer.Option(help="At most this many.")] = 100,
    as_json: JsonOpt = False,
) -> None:
    """List dead letters: messages given up for a recipient, with the reason."""
    from peerbus import dead_letters

    with opened(db, team) as bus:
        items = dead_letters(bus, recipient=recipient, limit=limit)
    _emit(
        items,
        as_json,
        lambda d: (
            f"{d.id:>7} for {_clean(d.recipient, 24)} from {_clean(d.sender, 24)}: "
            f"{_clean(d.reason, 100)}"
        ),
    )


@bus_app.command()
def retry(
    ids: Annotated[list[int] | None, typer.Argument(help="Message ids to retry.")] = None,
    db: DbOpt = None,
    team: TeamOpt = None,
    recipient: Annotated[
        str | None, typer.Option("--recipient", help="Retry this recipient's dead letters.")
    ] = None,
    all_: Annotated[bool, typer.Option("--all", help="Retry every dead letter.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Put dead letters back in the queue with a fresh attempt count."""
    if not ids and recipient is None and not all_:
        raise _fail("name message ids, --recipient ROLE, or --all", EXIT_USAGE)
    from peerbus import retry as retry_dead

    with opened(db, team) as bus:
        moved = retry_dead(bus, ids=ids or None, recipient=recipient)
    _emit({"retried": moved}, as_json, lambda d: f"retried {d['retried']} dead letter(s)")


def parse_duration(text: str) -> float:
    """Seconds from `90`, `90s`, `15m`, `12h` or `7d`."""
    match = _DURATION.fullmatch(text.strip())
    if not match:
        raise _fail(f"cannot read duration {text!r}: use e.g. 90s, 15m, 12h or 7d", EXIT_USAGE)
    unit = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}[match.group(2)]
    return float(match.group(1)) * unit


@bus_app.command()
def prune(
    db: DbOpt = None,
    team: TeamOpt = None,
    older_than: Annotated[
        str, typer.Option("--older-than", help="Age of done rows to delete: 90s, 15m, 12h, 7d.")
    ] = "7d",
    as_json: JsonOpt = False,
) -> None:
    """Delete done rows older than --older-than. Pending rows and dead letters are kept."""
    from peerbus import prune as prune_done

    seconds = parse_duration(older_than)
    with opened(db, team) as bus:
        deleted = prune_done(bus, older_than=seconds)
    _emit({"deleted": deleted}, as_json, lambda d: f"deleted {d['deleted']} done row(s)")
