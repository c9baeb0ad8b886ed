"""The host's alert service: raises alerts as events, then calls the operator back.

The host registers `see` as a listener of its event log: each written event goes through the
rules (rules.py) at once, synchronously and without I/O. `serve` owns two tasks. The raiser
writes each alert as an `AlertRaised` event at once (`EventLog.commit`), so every viewer (the
dashboard rings on it, `logs`, `ps`) sees it, and wakes at the team's quiet time to ask the
host whether anything is still pending. The service gets each written `AlertRaised` back
through `see`, with its id, and puts it on the bounded queue of each sink (a full queue drops
the oldest and counts it): notify-send (desktop.py) and the webhook (webhook.py), each sent
from a task of its own, so a webhook that hangs holds back no desktop notification. Nothing
here blocks the host or a turn: `see` only appends, a slow sink costs only its queue. A sink
that fails is logged once, as a warning event, until it works again.
"""

from __future__ import annotations

import math
import os
import time
from collections import deque
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from functools import partial
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

QUEUE = 100  # alerts waiting for a sink; past this the oldest is dropped

Send = Callable[[Logged], Awaitable[str | None]]


class Sink:
    """Where alerts go (the desktop, the webhook): a bounded queue and what sends one."""

    def __init__(self, name: str, send: Send) -> None:
        self.name = name
        self.send = send
        self.queue: deque[Logged] = deque()
        self.queued = anyio.Event()
        self.dropped = 0  # alerts the full queue dropped
        self.delivered = 0

    def put(self, logged: Logged) -> bool:
        """Queue an alert; False when the queue was full and its oldest alert was dropped."""
        full = len(self.queue) >= QUEUE
        if full:
            self.queue.popleft()
            self.dropped += 1
        self.queue.append(logged)
        self.queued.set()
        return not full

    async def next(self) -> Logged:
        while not self.queue:
            self.queued = anyio.Event()  # no await since the check: no `put` is missed
            await self.queued.wait()
        return self.queue.popleft()


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
        self.sinks: list[Sink] = []  # set by `serve`
        self._failing: set[str] = set()  # the sinks whose failure is logged already

    def see(self, logged: Logged) -> None:
        """A written event (an EventLog listener: quick, never blocks, never raises)."""
        if not self.settings.enabled:
            return
        if isinstance(logged.event, AlertRaised):
            for sink in self.sinks:
                if not sink.put(logged):
                    full = f"{QUEUE} alerts wait for the {sink.name} already: the oldest is "
                    self._judge(f"{sink.name} queue", full + f"dropped ({sink.dropped} so far)")
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
            notifier = find_notifier(self._env) if self.settings.desktop else None
            if notifier is not None:
                self.sinks.append(Sink("desktop", partial(self._notify, notifier)))
            if self.settings.webhook is not None:
                webhook = await stack.enter_async_context(
                    open_webhook(self.settings.webhook, **self._webhook_options)
                )
                self.sinks.append(Sink("webhook", partial(self._post, webhook)))
            async with anyio.create_task_group() as tg:
                for sink in self.sinks:
                    tg.start_soon(self._deliver, sink)
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
                try:
                    quiet = await self._is_quiet()
                except Exception:  # the bus did not answer: not quiet, asked again later
                    quiet = False
                alerts += self.rules.quiet_checked(self.clock(), quiet)
            if alerts:
                bell, desktop = self.settings.bell, self.settings.desktop
                await self.log.commit(*(a.event(bell=bell, desktop=desktop) for a in alerts))

    async def _deliver(self, sink: Sink) -> None:
        while True:
            logged = await sink.next()
            try:
                failure = await sink.send(logged)
            except Exception as exc:  # an alert that cannot go out never stops the host
                failure = f"the {sink.name} failed on an alert ({type(exc).__name__}: {exc})"
            sink.delivered += failure is None
            self._judge(sink.name, failure)
            if not sink.queue:
                self._judge(f"{sink.name} queue", None)  # drained: a new overflow is news

    async def _notify(self, notifier: str, logged: Logged) -> str | None:
        event = logged.event
        assert isinstance(event, AlertRaised)
        return await notify(notifier, f"mnemara {self.team}: {event.alert}", event.text)

    async def _post(self, webhook: Webhook, logged: Logged) -> str | None:
        return await webhook.post(payload(self.team, logged))

    def _judge(self, sink: str, failure: str | None) -> None:
        """Log a sink's failure once, until it works again (emit only: `see` calls it too,
        as a listener, and the log takes an event emitted there into its next batch)."""
        if failure is None:
            self._failing.discard(sink)
        elif sink not in self._failing:
            self._failing.add(sink)
            later = "; said once, until it works again"
            self.log.emit(Warned(panel=None, message=failure + later))
