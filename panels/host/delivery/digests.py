"""The digest service: every interval, tell each watchdog panel what the others are doing.

Snapshots of the panels are turned into a digest (panels/watchdog/digest.py) and submitted
on the bus from sender `host` to each watchdog panel, only when something changed since the
last one, so a quiet team costs its watchdog no turns. The host's team-loop findings
(loops/watch.py) go in each digest's alerts.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import anyio
import anyio.abc

from panels.host.delivery.feed import HOST
from panels.host.services import HostServices
from panels.host.turns.panel import PanelRunner
from panels.hostdb.catalogue import DigestSent
from panels.watchdog.digest import Activity, DigestSettings, build_digest, digest_key


def activity(runner: PanelRunner, now: float, tokens_per_minute: float = 0.0) -> Activity:
    spent = runner.spent()
    turn = runner.turn
    return Activity(
        name=runner.name,
        kind=runner.spec.kind,
        state=runner.state.value,
        turns=runner.turns,
        tokens=spent.input_tokens + spent.output_tokens,
        usd=spent.usd,
        turn_calls=turn.tool_calls if turn else 0,
        turn_seconds=now - turn.started_at if turn else 0.0,
        recent_calls=tuple(text for _, text in runner.recent_calls),
        halt=runner.halt_detail() or None,
        tokens_per_minute=tokens_per_minute,
    )


class DigestService:
    def __init__(
        self,
        services: HostServices,
        panels: Mapping[str, PanelRunner],
        *,
        settings: DigestSettings | None = None,
        interval: float | None = None,
        clock: Callable[[], float] | None = None,
    ) -> None:
        self.services = services
        self.panels = panels
        self.settings = settings or DigestSettings(runaway_calls=services.team.runaway_tool_calls)
        self.interval = interval if interval is not None else services.team.digest_interval
        self.clock = clock or services.clock
        self._last_key: dict[str, tuple[object, ...]] = {}
        self._last_tokens: dict[str, tuple[float, int]] = {}
        self.sent = 0

    def snapshot(self, exclude: str) -> list[Activity]:
        now = self.clock()
        out = []
        for runner in self.panels.values():
            if runner.name == exclude:
                continue
            spent = runner.spent()
            tokens = spent.input_tokens + spent.output_tokens
            then, before = self._last_tokens.get(runner.name, (now, tokens))
            rate = (tokens - before) * 60.0 / (now - then) if now > then else 0.0
            out.append(activity(runner, now, rate))
        return out

    def loops(self) -> tuple[str, ...]:
        """The host's recent loop findings, one line each (none when loops are not watched)."""
        watch = self.services.loops
        return watch.alerts() if watch is not None else ()

    def due(self) -> bool:
        """A watchdog would get a digest at the next interval."""
        loops = self.loops()
        return any(
            digest_key(self.snapshot(dog.name), self.settings, loops)
            != self._last_key.get(dog.name)
            for dog in self.panels.values()
            if dog.spec.is_watchdog
        )

    async def send_due(self) -> int:
        """Send a digest to each watchdog whose view changed; returns how many went."""
        sent = 0
        watchdogs = [r for r in self.panels.values() if r.spec.is_watchdog]
        loops = self.loops()
        for dog in watchdogs:
            panels = self.snapshot(dog.name)
            key = digest_key(panels, self.settings, loops)
            if key == self._last_key.get(dog.name):
                continue
            payload = build_digest(panels, self.settings, loops)
            ident = await self.services.bus.submit(HOST, dog.name, payload, topic="digest")
            self._last_key[dog.name] = key
            alerts = tuple(str(a) for a in payload["alerts"])
            self.services.log.emit(DigestSent(panel=dog.name, id=ident, alerts=alerts))
            sent += 1
        now = self.clock()
        for runner in self.panels.values():
            spent = runner.spent()
            self._last_tokens[runner.name] = (now, spent.input_tokens + spent.output_tokens)
        self.sent += sent
        return sent

    async def serve(
        self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        task_status.started()
        if not any(r.spec.is_watchdog for r in self.panels.values()):
            return
        while True:
            await anyio.sleep(self.interval)
            await self.send_due()
