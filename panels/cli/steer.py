"""`mnemara send | approve | deny | halt | resume | pause | stop | inbox`: steer a team's panels.

Each command is a verb of the catalogue (panels/hostdb/verbs.py), checked here as the host
will check it (a bad one exits 2 with the reason), then written into the control table of
the team's host.sqlite. The host's one dispatcher applies it and writes the outcome, which
is printed when it arrives. A verb given while no host runs waits in the table and is
applied when one starts, so operator input is never lost.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Annotated, Any

import typer

from panels.cli.errors import EXIT_FAILURE, EXIT_USAGE, fail, reports_errors
from panels.cli.options import PanelOpt, TeamOpt
from panels.cli.teams import check_panel, open_host_db, running_pid, team_state

if TYPE_CHECKING:
    from panels.hostdb.catalogue import Delivered

WAIT = 10.0  # seconds to wait for the host's outcome before saying the verb is queued
ANSWER_HELP = (
    "yes (this call), no (refuse it), session (the tool until the session ends) or always."
)


def make_verb(name: str, panel: str | None, **args: Any) -> Any:
    """The verb, checked as the host will check it; a bad one exits 2 with the reason."""
    from panels.hostdb import VerbError, parse_verb

    try:
        return parse_verb(name, panel, {k: v for k, v in args.items() if v is not None})
    except VerbError as exc:
        raise fail(str(exc), EXIT_USAGE) from None


def give(team: str, verb: Any, wait: float = WAIT) -> int | None:
    """Queue a verb, then print its outcome when the host has applied it. Returns the
    command's id once the host applied it, None when it is still queued."""
    from panels.hostdb import get_command, read_panels, submit_command

    conn = open_host_db(team)
    try:
        panel = verb.panel
        if panel is not None:
            check_panel(panel, [r.name for r in read_panels(conn)], team)
        name, state = team_state(team)
        running = running_pid(state) is not None
        if not running and verb.name == "answer":
            # Questions live only as long as their host (it answers no to every open one
            # when it stops): an answer must not wait for a later host's questions.
            _no_question(verb.request, name)
            return None
        ident = submit_command(conn, verb)
        if not running:
            typer.echo(f"queued command {ident}; no host is running, it applies when one starts")
            return None
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            command = get_command(conn, ident)
            if command is not None and command.state != "pending":
                typer.echo(f"{verb.name}: {command.outcome}")
                if command.state == "failed":
                    raise typer.Exit(EXIT_FAILURE)
                return ident
            time.sleep(0.02)
        typer.echo(f"queued command {ident}; the host has not answered yet")
        return None
    finally:
        conn.close()


def _no_question(request: int | None, team: str) -> None:
    """An answer while no host runs: nothing waits. Exit 0 when it named no question (there
    was nothing to do), 1 when it named one (that answer could not be given)."""
    why = f"no host of team {team!r} is running, so no question is waiting"
    if request is None:
        typer.echo(f"answer: nothing to answer: {why}")
        return
    raise fail(f"question {request} cannot be answered: {why} (a host answers no to its "
               "open questions when it stops)", EXIT_FAILURE)  # fmt: skip


def takes_input(event: Delivered, panel: str | None, message: int | None, bus: str) -> bool:
    """Whether the delivery `event` is the turn that took operator message `message` (on the
    bus whose identity is `bus`) for `panel`. Operator input waits on the host's own bus,
    which may not be the team's (a foreign table, PostgreSQL): ids there are counted apart
    from the team bus's, so an id is matched with its bus. Records written before events
    named their bus (`bus` empty on either side) are told by the sender instead: only
    `operator` writes on operator routes, and a turn takes from one bus."""
    from panels.host.delivery.feed import OPERATOR

    if message is None or event.panel != panel or message not in event.ids:
        return False
    if bus and event.bus:
        return event.bus == bus
    return OPERATOR in event.senders


def follow_ticket(team: str, command: int, wait: float) -> None:
    """The ticket of an input given through the control table: wait (at most `wait` seconds)
    until the turn that took it ends, and say how it ended; exit 1 when it did not end well."""
    from panels.hostdb import read_events
    from panels.hostdb.catalogue import Delivered, TurnEnded, VerbApplied

    conn = open_host_db(team)
    try:
        panel: str | None = None
        message: int | None = None
        bus = ""
        turn: int | None = None
        cursor = 0
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            for logged in read_events(conn, after=cursor, limit=1_000):
                cursor, event = logged.id, logged.event
                if isinstance(event, VerbApplied) and event.id == command:
                    panel, message, bus = event.panel, event.message, event.bus
                elif isinstance(event, Delivered) and takes_input(event, panel, message, bus):
                    turn = event.turn
                elif isinstance(event, TurnEnded) and (event.panel, event.turn) == (panel, turn):
                    error = f": {event.error}" if event.error else ""
                    typer.echo(f"turn {event.turn} of {event.panel} {event.outcome}{error}")
                    if event.outcome != "done":
                        raise typer.Exit(EXIT_FAILURE)
                    return
            time.sleep(0.05)
        state = "has not been taken by a turn yet" if turn is None else "is still running"
        raise fail(f"message {message} {state} after {wait:g}s; see `mnemara logs -t {team}`")
    finally:
        conn.close()


@reports_errors
def send(
    team: TeamOpt,
    panel: Annotated[
        str, typer.Option("--panel", "-p", "--to", metavar="NAME", help="The panel to talk to.")
    ],
    text: Annotated[list[str], typer.Argument(metavar="TEXT", help="What to say.")],
    wait: Annotated[
        float | None,
        typer.Option(
            "--wait",
            "-w",
            metavar="SECONDS",
            min=0,
            help="Wait (at most SECONDS) until the turn that takes the input has ended.",
        ),
    ] = None,
) -> None:
    """Operator input to a panel (kept until delivered, also while no host runs)."""
    command = give(team, make_verb("input", panel, text=" ".join(text)))
    if wait is not None:
        if command is None:
            raise fail("the input waits for a host; nothing to follow yet", EXIT_FAILURE)
        follow_ticket(team, command, wait)


RequestOpt = Annotated[
    int | None,
    typer.Option("--request", "-r", metavar="ID", help="The request id (`mnemara logs` shows it)."),
]
AnyPanelOpt = Annotated[
    str | None,
    typer.Option(
        "--panel", "-p", metavar="NAME", help="The panel asking; needed when several ask."
    ),
]


@reports_errors
def approve(
    team: TeamOpt,
    panel: AnyPanelOpt = None,
    request: RequestOpt = None,
    answer: Annotated[
        str, typer.Option("--answer", "-a", metavar="ANSWER", help=ANSWER_HELP)
    ] = "yes",
) -> None:
    """Answer a tool call a panel is waiting on (see `mnemara logs`); --answer no refuses it."""
    from runtime.policy.asking import Answer

    answers = [a.value for a in Answer]
    if answer not in answers:
        raise fail(f"unknown answer {answer!r}; say {', '.join(answers)}", EXIT_USAGE)
    give(team, make_verb("answer", panel, request=request, answer=answer))


@reports_errors
def deny(team: TeamOpt, panel: AnyPanelOpt = None, request: RequestOpt = None) -> None:
    """Refuse a tool call a panel is waiting on."""
    give(team, make_verb("answer", panel, request=request, answer="no"))


@reports_errors
def halt(
    team: TeamOpt,
    panel: PanelOpt,
    reason: Annotated[
        str, typer.Option("--reason", metavar="TEXT", help="Why (kept in the halt record).")
    ] = "",
) -> None:
    """Halt a panel: its turn stops now, a halt record is kept, its inbox waits."""
    give(team, make_verb("halt", panel, reason=reason or "halted by the operator"))


@reports_errors
def resume(team: TeamOpt, panel: PanelOpt) -> None:
    """Resume a paused or halted panel."""
    give(team, make_verb("resume", panel))


@reports_errors
def pause(team: TeamOpt, panel: PanelOpt) -> None:
    """Pause a panel after its turn in flight."""
    give(team, make_verb("pause", panel))


@reports_errors
def stop(team: TeamOpt, panel: PanelOpt) -> None:
    """Stop the turn a panel is running (its rows are kept, marked); the panel goes on."""
    give(team, make_verb("stop", panel))


@reports_errors
def inbox(
    team: TeamOpt,
    panel: PanelOpt,
    state: Annotated[
        str | None,
        typer.Argument(metavar="on|off", help="Switch the delivery of peer messages."),
    ] = None,
) -> None:
    """List what waits for a panel and whether delivery is on; `on` / `off` switches it."""
    if state is None:
        _list_inbox(team, panel)
        return
    if state not in ("on", "off"):
        raise fail(f"say on or off (got {state!r}), or nothing to list the inbox", EXIT_USAGE)
    give(team, make_verb("inbox", panel, on=state == "on"))


def _waiting(location: str, route: str, senders: list[str] | None) -> list[Any]:
    """What waits for `route` on the bus at `location` (nothing when there is no such file)."""
    import anyio

    from peerbus import open_bus, parse_location

    if not location:
        return []
    where = parse_location(location)
    if where.scheme == "sqlite" and not where.path.is_file():
        return []

    async def read() -> list[Any]:
        async with open_bus(location, inspect_only=True) as bus:
            return list(await bus.inbox(route, senders=senders, limit=50))

    return anyio.run(read)


def _list_inbox(team: str, panel: str) -> None:
    from panels.host.delivery.feed import operator_route
    from panels.hostdb import get_meta, read_panels
    from panels.text import clean

    conn = open_host_db(team)
    try:
        rows = {r.name: r for r in read_panels(conn)}
        meta = get_meta(conn)
    finally:
        conn.close()
    check_panel(panel, list(rows), team)
    state = "on" if rows[panel].inbox else "off"
    # Operator input waits on the host's own bus: the team's, unless that one is foreign.
    from panels.team import recorded_bus

    bus = recorded_bus(meta)
    operator = _waiting(recorded_bus(meta, "operator_bus") or bus, operator_route(panel), [])
    peers = _waiting(bus, panel, senders=None)
    waiting = [(item, True) for item in operator] + [(item, False) for item in peers]
    typer.echo(f"{panel}: delivery of peer messages is {state}; {len(waiting)} waiting")
    if not waiting:
        typer.echo("(nothing waits)")
    for item, from_operator in waiting:
        sender = clean(item.sender, 24) + (" (operator input)" if from_operator else "")
        typer.echo(f"{item.id:>7} {item.state:<7} {sender}: {clean(item.payload_json, 120)}")
