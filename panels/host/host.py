"""The host: runs a team's panels on trio, with its event log, control loop and watchdog.

`Host(team).serve()` owns everything for its lifetime: host.sqlite, the bus, the rehearsal
server (when the team file names a script), the event writer, the bus watcher, one
supervised task per panel, the control loop and the digest service. It reports readiness
once every panel has started (or failed its first start). `request_stop()` (SIGINT,
SIGTERM, `mnemara down`) stops it cleanly: no new claims, turns in flight get `grace`
seconds to finish and are then cancelled, every claim is settled, open questions are
answered no, the log is flushed. Nothing is left claimed.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc

from panels.host.asker import Approvals
from panels.host.bustools import bus_tools
from panels.host.control import serve_control, watchdog_action
from panels.host.digests import DigestService
from panels.host.drivers import claude_drivers
from panels.host.eventlog import EventLog, Listener, LiveListener
from panels.host.panel import PanelRunner
from panels.host.restart import RestartPolicy
from panels.host.services import DriverFactory, HostServices
from panels.host.supervisor import supervise
from panels.host.teambudget import team_over_budget
from panels.host.wakeup import BusWatch, Wakeup
from panels.hostdb import HostDb, open_hostdb
from panels.team import TeamSpec
from panels.watchdog import DigestSettings, watchdog_tools
from peerbus import Bus, open_bus
from runtime.driver import ToolSpec
from runtime.guard.records import HaltRecord

if TYPE_CHECKING:
    from runtime.rehearsal import RehearsalServer


class Host:
    def __init__(
        self,
        team: TeamSpec,
        *,
        drivers: DriverFactory | None = None,
        home: Path | None = None,
        policy: RestartPolicy | None = None,
        grace: float = 20.0,
        digest: DigestSettings | None = None,
        bus_poll: float = 0.01,
        listeners: Sequence[Listener] = (),
        log_interval: float = 0.1,
        live_listeners: Sequence[LiveListener] = (),
        redeliver_failed_input: bool = True,
    ) -> None:
        self.team = team
        self._drivers = drivers
        self._home = home
        self.policy = policy or RestartPolicy()
        self.grace = grace
        self.digest_settings = digest
        self.bus_poll = bus_poll
        self.listeners = tuple(listeners)
        self.log_interval = log_interval
        self.live_listeners = tuple(live_listeners)
        # False for a face whose operator sees a failed turn's error at once (the solo REPL):
        # the operator input of a failed turn is then acked, not delivered again (turn.py).
        self.redeliver_failed_input = redeliver_failed_input
        self._stop = anyio.Event()
        self._stopped = anyio.Event()
        self._control_poke = Wakeup()
        self.services: HostServices
        self.db: HostDb
        self.digests: DigestService
        self.rehearsal: RehearsalServer | None = None

    # -- the life of the host ----------------------------------------------------------------

    async def serve(
        self, *, task_status: anyio.abc.TaskStatus[Host] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        async with AsyncExitStack() as stack:
            self.team.state_dir.mkdir(parents=True, exist_ok=True)
            self.db = await stack.enter_async_context(open_hostdb(self.team.hostdb_path))
            bus_options: dict[str, Any] = {
                "poll_interval": self.bus_poll,
                "backstop_interval": max(0.25, self.bus_poll),
            }
            if self.team.silent_types is not None:
                bus_options["silent_types"] = self.team.silent_types
            bus = await stack.enter_async_context(open_bus(self.team.bus_path, **bus_options))
            async with anyio.create_task_group() as services_tg:
                drivers = await self._start_drivers(services_tg)
                self._build(bus, drivers)
                await services_tg.start(self.services.log.serve)
                await services_tg.start(self.services.watch.serve)
                await self._record_start()
                async with anyio.create_task_group() as panels_tg:
                    for runner in self.services.panels.values():
                        await panels_tg.start(supervise, runner, self._tools(runner), self.policy)
                    await self.services.log.write_status()
                    self.services.log.emit("host_ready", panels=list(self.services.panels))
                    await services_tg.start(self._control_loop)
                    await services_tg.start(self.digests.serve)
                    task_status.started(self)
                    await self._stop.wait()
                    await self._drain(panels_tg)
                self.services.log.emit("host_stopped")
                services_tg.cancel_scope.cancel()
        self._stopped.set()

    async def _start_drivers(self, tg: anyio.abc.TaskGroup) -> DriverFactory:
        if self._drivers is not None:
            return self._drivers
        if self.team.rehearsal is None:
            return claude_drivers()
        from runtime.rehearsal import RehearsalServer, load_script

        server = RehearsalServer(load_script(self.team.rehearsal))
        self.rehearsal = server
        url = await tg.start(server.serve)
        return claude_drivers(rehearsal_url=url, state_dir=self.team.state_dir)

    def _build(self, bus: Bus, drivers: DriverFactory) -> None:
        log = EventLog(self.db, interval=self.log_interval)
        for listener in self.listeners:
            log.listen(listener)
        for live in self.live_listeners:
            log.listen_live(live)
        self.services = HostServices(
            team=self.team,
            bus=bus,
            log=log,
            approvals=Approvals(),
            watch=BusWatch(bus),
            drivers=drivers,
            slots=anyio.CapacityLimiter(self.team.max_concurrent_turns),
            home=self._home,
            team_check=self.team_check,
            redeliver_failed_input=self.redeliver_failed_input,
        )
        for spec in self.team.panels:
            self.services.panels[spec.name] = PanelRunner(spec, self.services)
        log.track_status(lambda: [r.status_row() for r in self.services.panels.values()])
        self.digests = DigestService(self.services, settings=self.digest_settings)

    def _tools(self, runner: PanelRunner) -> list[ToolSpec]:
        tools = bus_tools(runner)
        if runner.spec.is_watchdog:
            tools += watchdog_tools(self, runner.name)
        return tools

    async def _record_start(self) -> None:
        import os

        await self.db.set_meta({"team": self.team.name, "pid": str(os.getpid()),
                                "bus": str(self.team.bus_path), "started": str(time.time()),
                                "source": str(self.team.source or "")})  # fmt: skip
        self.services.log.emit("host_started", team=self.team.name, bus=str(self.team.bus_path),
                               pid=os.getpid())  # fmt: skip

    async def _drain(self, panels_tg: anyio.abc.TaskGroup) -> None:
        """Stop claiming; give turns in flight `grace` seconds; then stop them and settle."""
        runners = list(self.services.panels.values())
        self.services.log.emit("host_stopping", grace=self.grace)
        for runner in runners:
            runner.stopping = True
            runner.wakeup.set()
        self.services.approvals.deny_all()
        with anyio.move_on_after(self.grace):
            await self._turns_ended(runners)
        for runner in runners:
            runner.stop_turn()
        # Each stopped turn settles (shielded, bounded) before its life returns; a panel
        # still waiting out a restart delay is woken by its flag.
        with anyio.move_on_after(30):
            await self._turns_ended(runners)
        panels_tg.cancel_scope.cancel()

    async def _turns_ended(self, runners: list[PanelRunner]) -> None:
        while True:
            ended = self.services.turn_ended.event
            if all(r.turn is None for r in runners):
                return
            await ended.wait()

    def request_stop(self) -> None:
        self._stop.set()

    async def stopped(self) -> None:
        """Wait until the host has stopped and settled everything."""
        await self._stopped.wait()

    @property
    def stopping(self) -> bool:
        return self._stop.is_set()

    # -- control ---------------------------------------------------------------------------

    def poke(self) -> None:
        """Look at the control table now (a command was written on this connection)."""
        self._control_poke.set()

    async def _control_loop(
        self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        await serve_control(self, self._control_poke, task_status=task_status)

    async def watchdog_action(self, actor: str, verb: str, target: str, text: str) -> str:
        return await watchdog_action(self, actor, verb, target, text)

    async def quiet(self) -> bool:
        """No turn running, nothing waiting for a panel that may run, no digest due."""
        from panels.host.delivery import operator_route

        runners = list(self.services.panels.values())
        if any(r.in_turn for r in runners):
            return False
        bus = self.services.bus
        for runner in runners:
            if runner.halt is not None or runner.paused or runner.stopping:
                continue
            if await bus.inbox(operator_route(runner.name), senders=(), limit=1):
                return False
            if runner.inbox_on and await bus.inbox(
                runner.name, senders=runner.spec.listens_to, limit=1
            ):
                return False
        return not self.digests.due()

    def team_check(self) -> HaltRecord | None:
        return team_over_budget(self.team.budget, list(self.services.panels.values()))


@asynccontextmanager
async def open_host(team: TeamSpec, **options: Any) -> AsyncIterator[Host]:
    """Run a host for the block (tests, the demo, benchmarks); stopped cleanly at the end."""
    host = Host(team, **options)
    async with anyio.create_task_group() as tg:
        await tg.start(host.serve)
        try:
            yield host
        finally:
            host.request_stop()
