"""What the dashboard shows, as plain strings: status lines, the header, the layout. Pure.
(A transcript's lines are entries.py's.)

Text from models, peers and tools is untrusted: every piece goes through `clean` (control
characters stripped, one line, cut to a width) before it is shown, and the widgets render
these strings with markup off, so `[bold]` stays `[bold]` and an ESC cannot reach the
terminal.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from panels.hostdb import PanelRow
from panels.hostdb import catalogue as ev
from panels.text import clean

MAX_PANELS = 16


def tokens(count: int) -> str:
    """A token count in a few characters: 950, 1k, 12.3k, 200k, 1.5M."""
    if count < 1_000:
        return str(count)
    unit, size = ("M", 1_000_000) if count >= 1_000_000 else ("k", 1_000)
    value = count / size
    return (f"{value:.1f}" if value < 100 else f"{value:.0f}").removesuffix(".0") + unit


def _against(value: str, limit: str | None) -> str:
    """`value/limit`, or `value` alone when there is no limit."""
    return f"{value}/{limit}" if limit else value


def status_line(row: PanelRow | None) -> str:
    """One panel's status row in one line, most important first, as a narrow pane cuts it
    at its end: state, turns, dead letters (when there are any), window against its cap,
    spend against its budget, inbox, epoch, model. (The demo's tmux test reads "idle · turns".)"""
    if row is None:
        return "no status yet"
    detail = f" ({clean(row.detail, 40)})" if row.detail else ""
    window = _against(tokens(row.window_tokens), tokens(row.token_cap) if row.token_cap else None)
    spend = _against(f"${row.usd:.2f}", f"${row.budget_usd:.2f}" if row.budget_usd else None)
    inbox = f"inbox {row.waiting}" if row.inbox else f"inbox off ({row.waiting} held)"
    dead = f" · {row.dead_letters} dead" if row.dead_letters else ""
    return (
        f"{clean(row.state, 20)}{detail} · turns {row.turns}{dead} · window {window} tok · "
        f"{spend} · {inbox} · epoch {row.epoch} · {clean(row.model, 40) or '-'}"
    )


@dataclass(frozen=True)
class BusActivity:
    """What the event log shows of the bus since the viewer attached (its backlog included):
    messages sent and delivered, dead letters said."""

    sent: int = 0
    delivered: int = 0
    dead: int = 0

    def plus(self, events: Iterable[ev.HostEvent]) -> BusActivity:
        sent, delivered, dead = self.sent, self.delivered, self.dead
        for event in events:
            if isinstance(event, ev.MessageSent):
                sent += 1
            elif isinstance(event, ev.Delivered):
                delivered += len(event.ids)
            elif isinstance(event, ev.DeadLettered):
                dead += 1
        return BusActivity(sent, delivered, dead)


def _meta_number(meta: dict[str, str], key: str) -> float:
    try:
        return float(meta.get(key, "0"))
    except ValueError:
        return 0.0


def header_line(
    meta: dict[str, str],
    *,
    running: bool,
    panels: int,
    waiting: int = 0,
    rows: Sequence[PanelRow] = (),
    bus: BusActivity | None = None,
    replay: str | None = None,
) -> str:
    """The team bar: team, host state, team spend against the team budget, bus activity (dead
    letters: those on the bus now, from the status rows), the last memory replay, approvals
    waiting."""
    team = clean(meta.get("team", "?"), 64)
    line = f"team {team} · host {'running' if running else 'stopped'} · {panels} panel(s)"
    usd = sum(r.usd for r in rows)
    budget = _meta_number(meta, "budget_usd")
    line += f" · spent {_against(f'${usd:.2f}', f'${budget:.2f}' if budget > 0 else None)}"
    token_budget = int(_meta_number(meta, "budget_tokens"))
    if token_budget > 0:
        used = sum(r.input_tokens + r.output_tokens for r in rows)
        line += f" · {tokens(used)}/{tokens(token_budget)} tok"
    if bus is not None:
        dead = sum(r.dead_letters for r in rows)
        line += f" · bus {bus.sent} sent, {bus.delivered} delivered, {dead} dead"
    if replay is not None:
        line += f" · replay {clean(replay, 80)}"
    return line + (f" · {waiting} approval(s) waiting" if waiting else "")


def waiting_line(requests: Sequence[int]) -> str:
    """A pane's mark while its panel waits for approvals."""
    listed = ", ".join(str(r) for r in requests)
    return f"WAITING for approval (request {listed})"


def host_running(events: Sequence[ev.HostEvent], was: bool) -> bool:
    """Whether the host runs after these events, given whether it ran before them."""
    for event in events:
        if isinstance(event, ev.HostStarted | ev.HostReady):
            was = True
        elif isinstance(event, ev.HostStopped):
            was = False
    return was


def grid_columns(panels: int) -> int:
    """Columns of the pane grid: as square as it gets (1, 2, 2, 2, 3... for 1, 2, 3, 4, 5...)."""
    return max(1, math.ceil(math.sqrt(max(1, min(panels, MAX_PANELS)))))


def spare_cells(panels: int, columns: int) -> int:
    """Cells of the grid's last row that no pane takes (1 for three panels in two columns)."""
    return -panels % columns if panels > 0 else 0


def approvals_line(waiting: Sequence[tuple[str, int]]) -> str:
    """The team cell's approvals: how many wait, and on which panels (request numbers)."""
    if not waiting:
        return "no approval waiting"
    by_panel: dict[str, list[int]] = {}
    for panel, request in waiting:
        by_panel.setdefault(panel, []).append(request)
    listed = ", ".join(
        f"{clean(panel, 40)} ({', '.join(str(r) for r in requests)})"
        for panel, requests in by_panel.items()
    )
    return f"{len(waiting)} approval(s) waiting: {listed}"


def alert_line(alert: ev.AlertRaised) -> str:
    """One alert in the team cell: what kind, whose, and what to do."""
    whose = clean(alert.panel, 40) if alert.panel is not None else "team"
    return f"{clean(alert.alert, 20)} · {whose} · {clean(alert.text, 300)}"


def bus_line(pending: int, dead: int) -> str:
    """The team cell's bus: messages waiting for a recipient, and dead letters."""
    return f"bus: {pending} pending · {dead} dead letter(s)"
