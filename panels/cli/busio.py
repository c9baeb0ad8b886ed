"""How the `mnemara bus` commands find, open and print a bus.

A bus is named by `--db FILE|URL` or `--team/-t NAME` (exactly one; a team's bus is found
as panels/cli/teams.py says). Commands reach it through `with_bus`, which opens it with
`peerbus.open_bus` (SQLite or PostgreSQL alike) for one async call. Text read from the bus
is untrusted: control characters are stripped before it reaches the terminal. Listings say
so when they are empty; `--json` output stays JSON (an empty list).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer

from panels.cli.errors import EXIT_BUS, EXIT_USAGE, fail
from panels.cli.options import not_negative

if TYPE_CHECKING:
    from peerbus import BusBackend

T = TypeVar("T")

DbOpt = Annotated[
    str | None,
    typer.Option(
        "--db",
        metavar="FILE|URL",
        help="The bus: a SQLite file (or sqlite:/// URL), or a postgresql:// URL.",
    ),
]
TeamOpt = Annotated[
    str | None,
    typer.Option(
        "--team",
        "-t",
        metavar="NAME",
        help="The team whose bus to use: its name, its team file, or a solo instance.",
    ),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON instead of text.")]
LimitOpt = Annotated[
    int,
    typer.Option("--limit", metavar="N", callback=not_negative, help="At most N messages."),
]


def resolve_location(db: str | None, team: str | None) -> str:
    """The bus named by --db or --team (exactly one): a file path or a URL."""
    if (db is None) == (team is None):
        raise fail("give exactly one of --db FILE|URL or --team NAME", EXIT_USAGE)
    if db is not None:
        return db
    from panels.cli.teams import bus_location

    assert team is not None
    return bus_location(team)


def one_of(new: str | None, old: str | None, spelling: str) -> str | None:
    """The panel named by `--panel` or by its older spelling; both must agree."""
    if new is not None and old is not None and new != old:
        raise fail(f"--panel {new!r} and {spelling} {old!r} disagree; give one of them", EXIT_USAGE)
    return new if new is not None else old


def with_bus(
    db: str | None,
    team: str | None,
    work: Callable[[BusBackend], Awaitable[T]],
    *,
    create: bool = False,
    inspect: bool = False,
) -> T:
    """Open the bus for one command, run `work` on it and close it (peerbus errors are
    reported with exit code 9).

    `create`: the command may make a new SQLite bus file. `inspect`: a read-only command,
    which must not create (or reset) a foreign table's sidecar. peerbus's notes (the
    compatibility notice) are printed once, by `notes_once`.
    """
    import anyio

    from peerbus import open_bus, parse_location

    location = resolve_location(db, team)
    where = parse_location(location)
    if where.scheme == "sqlite":
        check_file(where.path, create=create)

    async def run() -> T:
        async with open_bus(location, inspect_only=inspect) as bus:
            return await work(bus)

    with notes_once():
        return anyio.run(run)


def check_file(path: Path, *, create: bool) -> None:
    """A SQLite bus file the command can open, or a one-line error saying what to do."""
    if path.is_dir():
        raise fail(f"{path} is a directory; give the bus file inside it", EXIT_USAGE)
    if not create and not path.is_file():
        raise fail(f"no bus at {path}; check --db / --team, or send a message first", EXIT_BUS)
    if not path.parent.is_dir():
        raise fail(f"folder {path.parent} does not exist; create it first", EXIT_BUS)


@contextmanager
def notes_once() -> Iterator[None]:
    """Route the `peerbus` logger to stderr for one command, each note said once.

    peerbus logs its notice at open; echoing `bus.notice` as well printed it twice. Not
    propagated, so logging's last-resort handler does not print it a second time.
    logging is imported here, not at start-up: only commands that open a bus need it.
    """
    import logging

    said: set[str] = set()

    class NoteHandler(logging.Handler):
        """Prints each peerbus warning as one `mnemara: note:` line on stderr, once."""

        def emit(self, record: logging.LogRecord) -> None:
            text = record.getMessage()
            if text not in said:
                said.add(text)
                typer.echo(f"mnemara: note: {text}", err=True)

    logger = logging.getLogger("peerbus")
    handler, propagate = NoteHandler(logging.WARNING), logger.propagate
    logger.addHandler(handler)
    logger.propagate = False
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.propagate = propagate


def clean(text: object, limit: int | None = None) -> str:
    from peerbus.render import strip_controls

    one_line = " ".join(strip_controls(str(text)).split())
    return one_line if limit is None or len(one_line) <= limit else one_line[: limit - 1] + "…"


def emit(items: Any, as_json: bool, line: Any, empty: str | None = None) -> None:
    """Print items (or one item) as JSON or a line each; `empty` is said when there are none."""
    if as_json:
        typer.echo(json.dumps(plain(items), ensure_ascii=False, sort_keys=True))
        return
    if isinstance(items, list) and not items and empty is not None:
        typer.echo(empty)
    for item in items if isinstance(items, list) else [items]:
        typer.echo(line(item))


def plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def record_line(r: Any) -> str:
    to = r.recipient or "*"
    topic = f" [{clean(r.topic, 40)}]" if r.topic else ""
    return f"{r.id:>7} {r.status:<8} {clean(r.sender, 24)} -> {clean(to, 24)}{topic} " + clean(
        r.payload_json, 120
    )
