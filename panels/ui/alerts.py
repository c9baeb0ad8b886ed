"""The dashboard rings when the host raises an alert: the bell and a desktop notification.

The host writes an `AlertRaised` event when the operator is needed (panels/host/alerts/),
carrying the team file's `bell` and `desktop` settings. For each one the tail brings, the
app calls `AlertRinger.take`: the terminal bell (Textual's `App.bell`) and, for `desktop`,
the notification sequence the terminal shows as a desktop notification (`notification`, a
pure function): OSC 9 for the terminals known to show it (iTerm2, WezTerm, Ghostty, kitty
reads it too), OSC 777 otherwise (foot, urxvt, VTE terminals); a terminal that knows neither
ignores it, as terminals do any OSC they do not know. One sequence, not both: a terminal
that reads both would show the alert twice.

Only alerts written since the dashboard opened ring (`RECENT` seconds of slack, for the
alert that made the operator open it): the backlog a viewer reads on start is history. The
web dashboard (textual-serve) skips the escape sequences: a browser has no use for them.
Alert text is untrusted (tool targets come from models): control characters are stripped
and the separators of the sequences replaced, so nothing it holds can end the sequence.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Mapping
from typing import Any, Literal

from textual.app import App

from panels.hostdb import Logged
from panels.hostdb.catalogue import AlertRaised
from panels.text import clean

Style = Literal["9", "777"]
RECENT = 10.0  # seconds before the dashboard opened that still count as news
OSC9_TERMINALS = ("iTerm.app", "WezTerm", "ghostty", "kitty")
ST = "\x07"  # the sequences' terminator: BEL, which every terminal reading them accepts


def terminal_style(env: Mapping[str, str]) -> Style:
    """Which notification sequence this terminal shows."""
    program = env.get("TERM_PROGRAM", "")
    if program in OSC9_TERMINALS or "kitty" in env.get("TERM", ""):
        return "9"
    return "777"


def _field(text: str, limit: int) -> str:
    return clean(text, limit).replace(";", ",")


def notification(event: AlertRaised, *, team: str, style: Style) -> str:
    """The escape sequence of a desktop notification for an alert ("" when `desktop` is off)."""
    if not event.desktop:
        return ""
    title = _field(f"mnemara {team}: {event.alert}" if team else f"mnemara: {event.alert}", 80)
    body = _field(event.text, 200)
    if style == "9":
        return f"\x1b]9;{title}: {body}{ST}"
    return f"\x1b]777;notify;{title};{body}{ST}"


class AlertRinger:
    """Rings an app for each new alert the tail brings; once per alert."""

    def __init__(
        self, *, opened: float | None = None, env: Mapping[str, str] | None = None
    ) -> None:
        self.opened = time.time() if opened is None else opened
        self.style = terminal_style(os.environ if env is None else env)
        self._last = 0  # the id of the last alert rung: an alert read twice rings once
        self.rung = 0

    def due(self, events: Iterable[Logged]) -> list[AlertRaised]:
        """The new alerts among a batch of written events (pure, but for the memory of ids)."""
        out = []
        for logged in events:
            if not isinstance(logged.event, AlertRaised) or logged.id <= self._last:
                continue
            self._last = logged.id
            if logged.ts >= self.opened - RECENT:
                out.append(logged.event)
        return out

    def take(self, app: App[Any], events: Iterable[Logged], *, team: str = "") -> None:
        for alert in self.due(events):
            self.rung += 1
            if alert.bell:
                app.bell()
            sequence = notification(alert, team=team, style=self.style)
            # Textual has no public call for a raw sequence; its own bell, clipboard and
            # pointer-shape writes go to the driver this way.
            driver = app._driver
            if sequence and driver is not None and not app.is_headless and not app.is_web:
                driver.write(sequence)
