"""The host's alert service: raises alerts as events, then calls the operator back.

The host registers `see` as a listener of its event log: each written event goes through the
rules (rules.py) at once, synchronously and without I/O. `serve` owns two tasks. The raiser
writes each alert as an `AlertRaised` event at once (`EventLog.commit`), so every viewer (the
dashboard rings on it, `logs`, `ps`) sees it, and wakes at the team's quiet time to ask the
host whether anything is still pending. The caller gets the written `AlertRaised` back
through `see`, with its id, and puts it on a bounded queue (a full queue drops the oldest and
counts it); the deliverer sends each to notify-send (desktop.py) and to the webhook
(webhook.py). Nothing here blocks the host or a turn: `see` only appends, the deliverer's
slowness costs only its queue. A sink that fails is logged once, as a warning event, until it
works again.
"""

from __future__ import annotations

import math
import os
import time
from collections import deque
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from typing import Any

import anyio
import anyio.abc

from panels.host.alerts.desktop import find_notifier, notify
from panels.host.alerts.rules import Alert, AlertRules
from panels.host.alerts.webhook import Webhook, open_webhook, payload
from panels.host.control.eventlog import EventLog
from panels.hostdb import Logged
from panels.hostdb.catalogue import AlertRaised, Warned
from panels.team import TeamSpec

QUEUE = 100  # alerts waiting for the deliverer; past this the oldest is dropped


class AlertService:
    def __init__(
        self,
        team: TeamSpec,
        log: EventLog,
        is_quiet: Callable[[], Awaitable[bool]],
        *,
        clock: Callable[[], float] = time.monotonic,
        env: dict[str, str] | None = None,
        webhook_options: dict[str, Any] | None = None,
    ) -> None:
        self.team = team.name
        self.settings = team.alerts
        self.log = log
        self.rules = AlertRules(
            quiet_seconds=self.settings.quiet_seconds,
            min_interval=self.settings.min_interval_seconds,
        )
        self._is_quiet = is_quiet
        self.clock = clock
        self._env = dict(os.environ) if env is None else env
        self._webhook_options = webhook_options or {}
        self._pending: list[Alert] = []
        self._wake = anyio.Event()
        self._outbox: deque[Logged] = deque()
        self._queued = anyio.Event()
        self.dropped = 0  # alerts the full queue dropped
        self.delivered = 0  # alerts every sink took
        self._failing: set[str] = set()  # the sinks whose failure is logged already

    def see(self, logged: Logged) -> None:
        """A written event (an EventLog listener: quick, never blocks, never raises)."""
        if not self.settings.enabled:
            return
        if isinstance(logged.event, AlertRaised):
            if len(self._outbox) >= QUEUE:
                self._outbox.popleft()
                self.dropped += 1
            self._outbox.append(logged)
            self._queued.set()
            return
        due = self.rules.quiet_at()
        alerts = self.rules.see(logged, self.clock())
        self._pending.extend(alerts)
        if alerts or self.rules.quiet_at() != due:  # the raiser's quiet time moved
            self._wake.set()

    async def serve(
        self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        if not self.settings.enabled:
            task_status.started()
            return
        async with AsyncExitStack() as stack:
            webhook = None
            if self.settings.webhook is not None:
                url = self.settings.webhook
                webhook = await stack.enter_async_context(
                    open_webhook(url, **self._webhook_options)
                )
            notifier = find_notifier(self._env) if self.settings.desktop else None
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._deliver, webhook, notifier)
                task_status.started()
                await self._raise()

    async def _raise(self) -> None:
        while True:
            due = self.rules.quiet_at()
            with anyio.move_on_after(math.inf if due is None else max(0.0, due - self.clock())):
                await self._wake.wait()
            self._wake = anyio.Event()  # before taking the pending: a later `see` sets the new
            alerts, self._pending = self._pending, []
            due = self.rules.quiet_at()
            if due is not None and self.clock() >= due:
                quiet = await self._is_quiet()
                alerts += self.rules.quiet_checked(self.clock(), quiet)
            if alerts:
                bell, desktop = self.settings.bell, self.settings.desktop
                await self.log.commit(*(a.event(bell=bell, desktop=desktop) for a in alerts))

    async def _deliver(self, webhook: Webhook | None, notifier: str | None) -> None:
        while True:
            if not self._outbox:
                self._queued = anyio.Event()
                await self._queued.wait()
                continue
            logged = self._outbox.popleft()
            event = logged.event
            assert isinstance(event, AlertRaised)
            ok = True
            if notifier is not None:
                title = f"mnemara {self.team}: {event.alert}"
                ok &= self._judge("desktop", await notify(notifier, title, event.text))
            if webhook is not None:
                ok &= self._judge("webhook", await webhook.post(payload(self.team, logged)))
            self.delivered += ok

    def _judge(self, sink: str, failure: str | None) -> bool:
        """Log a sink's failure once, until it works again; True when it worked."""
        if failure is None:
            self._failing.discard(sink)
            return True
        if sink not in self._failing:
            self._failing.add(sink)
            later = "; later failures are not logged until it works again"
            self.log.emit(Warned(panel=None, message=failure + later))
        return False
