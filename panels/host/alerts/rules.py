"""When the operator is called back: the alert rules, a pure function of the events and a clock.

`AlertRules.see` reads each written event once (its id is the key: an event fed twice alerts
once) and answers the alerts it raises: a panel asks for an approval, is halted (not by the
operator, who knows), is given up after its failures. The team going quiet is a matter of
time: `quiet_at` says when the team would have been quiet for `quiet_seconds` (no turn
running since the last turn ended, at least one turn since the last quiet alert), and the
service, at that time, asks the host whether anything is pending and hands the answer to
`quiet_checked`. Every alert passes a rate limit per (panel, kind): at most one each
`min_interval` seconds; the ones held back are counted, never queued for later.

Times are the service's clock (monotonic seconds); nothing here sleeps, reads or writes.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Literal

from panels.hostdb import HostEvent, Logged
from panels.hostdb import catalogue as ev
from panels.text import clean

AlertKind = Literal["approval", "halted", "failed", "quiet"]
OPERATOR = "operator"  # the sender of the operator's own verbs (delivery/feed.py)
SEEN = 4096  # how many event ids are remembered for "once per event"
TEXT = 200  # an alert's text is one line of at most this many characters


@dataclass(frozen=True)
class Alert:
    """An alert to raise: `panel` None for the team; `cause` the id of the event it answers."""

    panel: str | None
    kind: AlertKind
    text: str
    cause: int = 0

    def event(self, *, bell: bool, desktop: bool) -> ev.AlertRaised:
        return ev.AlertRaised(panel=self.panel, alert=self.kind, text=self.text,
                              cause=self.cause, bell=bell, desktop=desktop)  # fmt: skip


def alert_for(event: HostEvent, ident: int) -> Alert | None:
    """The alert one event calls for, before the rate limit; None for most events."""
    who = clean(event.panel or "the team", 40)
    kind: AlertKind
    match event:
        case ev.ApprovalAsked():
            kind = "approval"
            what = clean(f"{event.tool} {event.target}", 80)
            text = f"{who} waits for your approval of {what} (request {event.request})"
        case ev.Halted() if event.by != OPERATOR:
            kind = "halted"
            text = f"{who} was halted by {clean(event.by, 40)}: {clean(event.message, 80)}"
        case ev.PanelGivenUp():
            kind = "failed"
            text = f"{who} failed for good: {clean(event.reason, 80)}"
        case _:
            return None
    return Alert(event.panel, kind, _hint(text, kind), ident)


_HINTS: dict[AlertKind, str] = {
    "approval": "answer it in the dashboard or with `mnemara approve`",
    "halted": "see `mnemara logs`, then `mnemara resume` it",
    "failed": "see `mnemara logs`; restart the team when it is fixed",
    "quiet": "no turn runs and nothing waits for a panel that may run; see `mnemara ps`",
}


def _hint(text: str, kind: AlertKind) -> str:
    return clean(f"{text}; {_HINTS[kind]}", TEXT)


@dataclass
class AlertRules:
    quiet_seconds: float
    min_interval: float
    held_back: int = 0  # alerts the rate limit did not raise
    _last: dict[tuple[str | None, AlertKind], float] = field(default_factory=dict)
    _seen: set[int] = field(default_factory=set)
    _order: deque[int] = field(default_factory=deque)
    _running: set[str] = field(default_factory=set)
    _turns: int = 0  # turns ended since the last quiet alert
    _since: float | None = None  # when the last turn ended with none running after it

    def see(self, logged: Logged, now: float) -> list[Alert]:
        """The alerts a newly written event raises (at most one)."""
        if logged.id in self._seen:
            return []
        self._remember(logged.id)
        event = logged.event
        match event:
            case ev.TurnStarted(panel=str(name)):
                self._running.add(name)
                self._since = None
            case ev.TurnEnded(panel=str(name)):
                self._running.discard(name)
                self._turns += 1
                if not self._running:
                    self._since = now
        alert = alert_for(event, logged.id)
        return self._limit([alert], now) if alert is not None else []

    def quiet_at(self) -> float | None:
        """When the team will have been quiet long enough to alert; None: not armed."""
        if self._running or self._turns == 0 or self._since is None:
            return None
        return self._since + self.quiet_seconds

    def quiet_checked(self, now: float, quiet: bool) -> list[Alert]:
        """The host's answer at `quiet_at`: quiet, the alert; not (something pending), the
        time starts again, as it would after a turn."""
        due = self.quiet_at()
        if due is None or now < due:
            return []
        if not quiet:
            self._since = now
            return []
        turns, self._turns, self._since = self._turns, 0, None
        text = f"the team is quiet after {turns} turn(s)"
        return self._limit([Alert(None, "quiet", _hint(text, "quiet"))], now)

    def _limit(self, alerts: list[Alert], now: float) -> list[Alert]:
        out = []
        for alert in alerts:
            key = (alert.panel, alert.kind)
            last = self._last.get(key)
            if last is not None and now - last < self.min_interval:
                self.held_back += 1
                continue
            self._last[key] = now
            out.append(alert)
        return out

    def _remember(self, ident: int) -> None:
        self._seen.add(ident)
        self._order.append(ident)
        if len(self._order) > SEEN:
            self._seen.discard(self._order.popleft())
