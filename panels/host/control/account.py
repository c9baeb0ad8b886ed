"""Events as lines a person reads: `mnemara logs`, `up --headless` and the demo's account. Pure.

One line per event of the catalogue (panels/hostdb/catalogue.py); kinds that only matter to
machines (state changes, stores, settles) are shown with `--verbose`, field by field. Text
from models and peers is untrusted: control characters are stripped and every line is cut to
a width, so nothing a panel writes can move the cursor or forge another line. `ps`'s lines
are here too: its header (what is true of the host) and its table, the panels waiting on the
operator first. `last_lines`, the one reader here, pages back through host.sqlite for the
last lines `logs` and the MCP server's `events` show.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection, Iterable, Sequence
from typing import TYPE_CHECKING

from panels.host.turns.states import PanelState
from panels.hostdb import Logged, PanelRow, last_event_id, read_events
from panels.hostdb import catalogue as ev
from panels.text import clean
from panels.unconfined import badge
from runtime.policy.display import escape_command_for_display

if TYPE_CHECKING:
    import sqlite3

WIDTH = 110


def ids(values: Iterable[int]) -> str:
    listed = ", ".join(str(v) for v in values)
    return listed or "none"


def _tool(name: str) -> str:
    return name.removeprefix("mcp__mnemara__")


def line(event: ev.HostEvent) -> str | None:
    """The line for an event, or None for the kinds only `--verbose` shows."""
    who = clean(event.panel or "host", 40)
    match event:
        case ev.VerbApplied(verb="input", ok=True, text=text, by=by):
            return f"{clean(by, 40)} -> {who}: {clean(text)}"
        case ev.VerbApplied(verb="nudge", ok=True, text=text, by=by):
            return f"{clean(by, 40)} nudges {who}: {clean(text)}"
        case ev.VerbApplied():
            target = f" {who}" if event.panel else ""
            args = f" ({clean(event.summary, 80)})" if event.summary else ""
            refused = "" if event.ok else "REFUSED: "
            return (
                f"{clean(event.by, 40)} {clean(event.verb, 20)}{target}{args}: {refused}"
                + clean(event.outcome)
            )
        case ev.Said():
            return f"{who} says: {clean(event.text, 300)}"
        case ev.ToolCalled():
            return f"{who} calls {clean(_tool(event.tool), 60)} {clean(event.input, 120)}"
        case ev.ToolAnswered():
            flag = "error" if event.error else "result"
            return f"{who}   {flag}: {clean(event.content, 120)}"
        case ev.MessageSent():
            terminal = " (terminal)" if event.terminal else ""
            queued = f" (outbox {clean(event.outbox, 20)})" if event.outbox else ""
            return f"{who} -> {clean(event.to, 40)} message {event.id}{queued}{terminal}: " + clean(
                event.text
            )
        case ev.Delivered():
            stale = f" (stale: {ids(event.stale_ids)})" if event.stale_ids else ""
            senders = ", ".join(clean(s, 40) for s in event.senders)
            return f"{who} <- turn {event.turn}: message(s) {ids(event.ids)} from {senders}{stale}"
        case ev.Halted():
            return f"{who} HALTED by {clean(event.by, 40)}: {event.rule}: {clean(event.message)}"
        case ev.LoopFlagged():
            return f"{who} LOOP FLAG {event.rule}: {clean(event.message)}"  # names edge, ids
        case ev.ShadowHalt():
            return f"{who} sentinel, shadow mode (nothing stopped): {event.rule}: " + clean(
                event.message
            )
        case ev.Resumed():
            lifted = f" (the {event.rule} halt is lifted)" if event.rule else ""
            return f"{who} resumed by {clean(event.by, 40)}{lifted}"
        case ev.DigestSent():
            alerts = (
                f", alerts: {clean('; '.join(event.alerts))}" if event.alerts else ", no alerts"
            )
            return f"host -> {who} digest (message {event.id}){alerts}"
        case ev.TurnEnded():
            error = f"; {clean(event.error)}" if event.error else ""
            return (
                f"{who} turn {event.turn} {event.outcome}: {event.tool_calls} tool call(s), "
                f"{event.input_tokens} in / {event.output_tokens} out tokens, "
                f"${event.usd:.4f}{error}"
            )
        case ev.PanelFailed():
            return f"{who} failed: {clean(event.error)}"
        case ev.PanelGivenUp():
            return f"{who} given up: {clean(event.reason)}"
        case ev.PanelRestarting():
            return f"{who} restarting in {event.delay:g}s"
        case ev.PanelStarted():
            return f"{who} started (epoch {event.epoch}, model {clean(event.model, 60)})"
        case ev.ApprovalAsked():
            return (
                f"{who} ASKS (request {event.request}): {clean(event.tool, 60)} "
                f"{clean(escape_command_for_display(event.target))} ({clean(event.reason)})"
            )
        case ev.ApprovalAnswered():
            return f"{who} approval {event.request}: {clean(event.answer, 40)}"
        case ev.AlertRaised():
            return f"{clean(event.panel or 'team', 40)} ALERT {clean(event.alert, 20)}: " + clean(
                event.text
            )
        case ev.RedeliverySkipped() if not event.ids:  # a follow-up turn's, logged late
            return f"{who} turn of row(s) {ids(event.turns)} committed before its host stopped"
        case ev.RedeliverySkipped():
            turns = f" by the turn(s) of row(s) {ids(event.turns)}" if event.turns else ""
            return f"{who} redelivery skipped (already processed{turns}): {ids(event.ids)}"
        case ev.DeadLettered():
            sender = f" from {clean(event.sender, 40)}" if event.sender else ""
            return f"{who} DEAD LETTER: message {event.id}{sender} given up: {clean(event.reason)}"
        case ev.SendFailed():
            return (
                f"{who} -> {clean(event.to, 40)} message {clean(event.outbox, 20)} NOT SENT: "
                + clean(event.reason)
            )
        case ev.AckSent():
            return f"{who} -> {clean(event.to, 40)} ack of message {event.ack_of}"
        case ev.OrphansSwept():
            pairs = zip(event.pids, event.commands, strict=False)
            shown = "; ".join(f"{pid} {clean(command, 60)}" for pid, command in pairs)
            return f"host killed {len(event.pids)} process(es) an earlier life left: {shown}"
        case ev.InboxSwitched():
            return f"{who} inbox delivery {'on' if event.on else 'off'}"
        case ev.ModelChanged():
            return f"{who} model is now {clean(event.model, 60)}"
        case ev.WindowTokensChanged():
            return f"{who} max_window_tokens is now {event.max_window_tokens}"
        case ev.Warned():
            return f"{who} warning: {clean(event.message)}"
        case ev.CheckpointTaken():
            return (
                f"{who} checkpoint {event.number} before turn {event.turn}: {event.changed} "
                f"file(s) changed since the last ({event.ms:.0f} ms)"
            )
        case ev.LeaseTakenOver():
            return (
                f"host took over the stale lease of instance {clean(event.instance, 64)} "
                f"(left by {clean(event.previous, 120)})"
            )
        case ev.HostStarted():
            life = f", life {clean(event.life, 12)}" if event.life else ""
            return f"host started (team {clean(event.team, 64)}, pid {event.pid}{life})"
        case ev.HostReady():
            return f"host ready: {', '.join(clean(p, 40) for p in event.panels)}"
        case ev.HostStopping():
            return "host stopping"
        case ev.HostStopped():
            return "host stopped"
    return None


def verbose_line(event: ev.HostEvent) -> str:
    """Any event, field by field (for the kinds without a line of their own)."""
    who = clean(event.panel or "host", 40)
    if isinstance(event, ev.UnknownEvent):
        return f"{who} {clean(event.stored_kind, 40)}: (not readable here: {event.why})"
    fields = []
    for f in dataclasses.fields(event):
        if f.name == "panel":
            continue
        value = getattr(event, f.name)
        shown = ids(value) if isinstance(value, tuple) else clean(value, 80)
        fields.append(f"{f.name}={shown}")
    return f"{who} {event.kind}: " + ", ".join(fields)


def format_event(
    logged: Logged, start: float | None = None, *, verbose: bool = False
) -> str | None:
    """One line for a logged event, or None for events only `verbose` shows."""
    text = line(logged.event)
    if text is None:
        if not verbose:
            return None
        text = verbose_line(logged.event)
    stamp = f"{logged.ts - start:6.1f}s" if start is not None else f"#{logged.id}"
    return f"{stamp}  {text}"[: WIDTH * 3]


def last_lines(
    conn: sqlite3.Connection,
    count: int,
    *,
    panel: str | None = None,
    verbose: bool = False,
    page: int = 500,
) -> tuple[list[str], int]:
    """The last `count` printable lines of the event log (of `panel`, if given), and the id
    of the newest event there: read back a page at a time until enough lines are found."""
    newest = last_event_id(conn)
    lines: list[str] = []
    before = newest + 1
    while len(lines) < count and before > 1:
        start = max(0, before - 1 - page)
        found = [
            e for e in read_events(conn, after=start, panel=panel, limit=page) if e.id < before
        ]
        lines = [t for e in found if (t := format_event(e, verbose=verbose)) is not None] + lines
        before = start + 1
    return lines[-count:] if count else [], newest


def printer(out: Callable[[str], None], *, skip: Collection[str] = ()) -> Callable[[Logged], None]:
    """A host listener that prints each event as a line, timed from the first event seen."""
    first: list[float] = []

    def show(logged: Logged) -> None:
        if not first:
            first.append(logged.ts)
        text = format_event(logged, first[0])
        if text is not None and logged.event.kind not in skip:
            out(text)

    return show


def account(events: Iterable[Logged], *, verbose: bool = False) -> list[str]:
    events = list(events)
    start = events[0].ts if events else 0.0
    lines = [format_event(e, start, verbose=verbose) for e in events]
    return [text for text in lines if text is not None]


def ps_header(team: str, pid: int | None, meta: dict[str, str], log: str) -> str:
    """`ps`'s first line: whether the host runs, and its bus as the host recorded it when it
    started. A host that never got that far (it failed while starting) recorded none: the
    line says so and names its log, which says why."""
    bus = meta.get("bus")
    if pid:
        state = f"host running (pid {pid})"
        return f"team {team}: {state}; bus {bus}" if bus else f"team {team}: {state}, starting"
    if bus:
        return f"team {team}: host stopped; bus {bus}"
    return f"team {team}: host not started (no start recorded; {log} says why)"


def waiting_first(rows: Sequence[PanelRow]) -> list[PanelRow]:
    """The panels waiting on the operator (an open approval) first, then the rest; each
    group in the host's order."""
    return sorted(rows, key=lambda r: r.state != PanelState.APPROVAL)


def table(rows: Sequence[PanelRow], team: str = "TEAM") -> list[str]:
    """`ps`: one line per panel, those waiting on the operator first, with a line that says
    so (tokens and dollars: the panel's session under this host; tools: sandboxed,
    UNCONFINED, or - when not known)."""
    rows = waiting_first(rows)
    asking = [r.name for r in rows if r.state == PanelState.APPROVAL]
    head = (
        f"{'panel':<14}{'kind':<10}{'state':<12}{'turns':>6}{'in tok':>10}{'out tok':>9}"
        f"{'usd':>10}  inbox  dead  {'tools':<11}detail"
    )
    out = [head]
    for r in rows:
        out.append(
            f"{clean(r.name, 13):<14}{clean(r.kind, 9):<10}{clean(r.state, 11):<12}{r.turns:>6}"
            f"{r.input_tokens:>10}{r.output_tokens:>9}{r.usd:>10.4f}  {'on ' if r.inbox else 'off'}"
            f"  {r.dead_letters:>5}  {badge(r) or '-':<11}{clean(r.detail, 60)}"
        )
    if asking:
        names = ", ".join(clean(name, 40) for name in asking)
        one = len(asking) == 1
        out.insert(0, f"waiting on you (listed first): {names} "
                      f"{'asks to run a tool' if one else 'ask to run tools'}; "
                      f"`mnemara approve -t {team} -p {names if one else 'NAME'}` "
                      f"or `deny` answers")  # fmt: skip
    if not rows:
        out.append("(no panels recorded yet: the host has not started them)")
    elif any(r.dead_letters for r in rows):
        out.append("dead: messages given up; `mnemara bus dead` lists them, `bus retry` revives")
    return out
