"""The host: runs a team's panels on trio, with its event log, control plane and watchdog.

`Host(team).serve()` owns everything for its lifetime: a lease on every instance the team
uses (another process holding one stops the start, naming it), host.sqlite, the bus (and,
when the team's bus is a foreign file other programs read, a bus of its own for operator
input: `operator_bus_path`), the rehearsal server (when the team file names a script), the
event writer, the bus watcher, one supervised task per panel, the control-table reader and
the digest service. It reports readiness once every panel has started (or failed its first
start). Verbs from anyone go through `dispatch` (dispatch.py). `request_stop()` (SIGINT,
SIGTERM, `mnemara down`) stops it cleanly: no new claims, turns in flight get `grace`
seconds to finish and are then cancelled, every claim is settled, open questions are
answered no, the log is flushed. Nothing is left claimed.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import AsyncIterator, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc

from panels.host.alerts.service import AlertService
from panels.host.control.asker import Approvals
from panels.host.control.dispatch import Dispatcher, Outcome
from panels.host.control.eventlog import EventLog, Listener, LiveListener
from panels.host.control.reader import serve_control
from panels.host.delivery.bustools import PanelPort, bus_tools
from panels.host.delivery.digests import DigestService
from panels.host.delivery.externals import register_externals
from panels.host.delivery.feed import OPERATOR, operator_route
from panels.host.delivery.inboxes import serve_inbox_counts
from panels.host.delivery.poison import ISOLATE_AFTER, POISON_ATTEMPTS
from panels.host.delivery.tickets import Tickets
from panels.host.loops.graph import TeamGraph
from panels.host.loops.rules import LoopSettings
from panels.host.loops.watch import LoopWatch, TurnView
from panels.host.services import DriverFactory, HostServices
from panels.host.turns.confine import SHARED, team_sandbox
from panels.host.turns.drivers import claude_drivers
from panels.host.turns.instances import ensure_instance
from panels.host.turns.orphans import marker_env, sweep_orphans
from panels.host.turns.panel import PanelRunner
from panels.host.turns.restart import RestartPolicy
from panels.host.turns.supervisor import supervise
from panels.host.turns.wakeup import BusWatch
from panels.hostdb import HostDb, open_hostdb
from panels.hostdb.catalogue import (
    HostReady,
    HostStarted,
    HostStopped,
    HostStopping,
    LeaseTakenOver,
    OrphansSwept,
    Warned,
)
from panels.hostdb.verbs import Verb
from panels.team import TeamSpec
from panels.unconfined import META_KEY, UNCONFINED, told
from panels.watchdog import DigestSettings, watchdog_tools
from peerbus import BusBackend, BusOptions, open_bus, redact
from runtime.guard.budget import Spend
from runtime.instance.lease import Lease, LeaseOwner, acquire_lease
from runtime.memory import Memory
from runtime.memory.memory import open_shared_memory
from runtime.sandbox import sweep_leftovers
from runtime.turn.driver import ToolSpec

if TYPE_CHECKING:
    from runtime.rehearsal import RehearsalServer
    from runtime.sandbox import Sandbox


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
        bus_recheck: float = 5.0,
        listeners: Sequence[Listener] = (),
        log_interval: float = 0.1,
        live_listeners: Sequence[LiveListener] = (),
        redeliver_failed_input: bool = True,
        holder: str = "",
        life: str = "",
        loops: LoopSettings | None = None,
    ) -> None:
        self.team = team
        # This life's id: written with the pid, stamped on host_started and host_ready, and
        # put in the environment of every CLI the host starts (the next life sweeps leftovers).
        self.life = life or uuid.uuid4().hex
        self._drivers = drivers
        self._home = home
        self.policy = policy or RestartPolicy()
        self.grace = grace
        self.digest_settings = digest
        # The team-level loop rules: `[team.loops]` over their defaults, unless given here.
        self.loop_settings = loops or replace(LoopSettings(), **team.loops.given())
        self.bus_poll = bus_poll
        # Seconds between the bus watcher's wake-ups when nothing changed (wakeup.py).
        self.bus_recheck = bus_recheck
        self.listeners = tuple(listeners)
        self.log_interval = log_interval
        self.live_listeners = tuple(live_listeners)
        # False for a face whose operator sees a failed turn's error at once (the solo REPL):
        # the operator input of a failed turn is then acked, not delivered again (turn.py).
        self.redeliver_failed_input = redeliver_failed_input
        self.holder = holder or f"the host of team {team.name!r}"
        self._stop = anyio.Event()
        self._stopped = anyio.Event()
        self.panels: dict[str, PanelRunner] = {}
        self.tickets = Tickets()
        self.services: HostServices
        self.db: HostDb
        self.dispatcher: Dispatcher
        self.digests: DigestService
        self.alerts: AlertService
        self.rehearsal: RehearsalServer | None = None
        # What confines the panels' tools, with what to do when nothing does: in the log and
        # host.sqlite's meta at start (unconfined.py). A caller that gives its own drivers
        # may set it before `serve`.
        self.sandbox_note = ""

    # -- the life of the host ----------------------------------------------------------------

    async def serve(
        self, *, task_status: anyio.abc.TaskStatus[Host] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        try:
            await self._serve(task_status)
        finally:
            self._stopped.set()

    async def _serve(self, task_status: anyio.abc.TaskStatus[Host]) -> None:
        async with AsyncExitStack() as stack:
            leases = await anyio.to_thread.run_sync(self._lease_instances)
            for lease in leases:
                stack.callback(lease.release)
            # Holding every lease, this is the team's only host: a process marked with
            # another life of its state dir is a leftover of a crashed host (orphans.py).
            swept = await anyio.to_thread.run_sync(
                lambda: sweep_orphans(self.team.state_dir, current_life=self.life)
            )
            # And the directories of sandboxes whose host was killed (runtime/sandbox/leftovers.py).
            await anyio.to_thread.run_sync(sweep_leftovers)
            self.team.state_dir.mkdir(parents=True, exist_ok=True)
            self.db = await stack.enter_async_context(open_hostdb(self.team.hostdb_path))
            bus_options: dict[str, Any] = {
                "poll_interval": self.bus_poll,
                "backstop_interval": max(BusOptions.backstop_interval, self.bus_poll),
                # Poison isolation (poison.py): a failed message is delivered alone, and the
                # bus's backstop dead-letters at the count the host judges by.
                "max_attempts": POISON_ATTEMPTS,
                "isolate_after": ISOLATE_AFTER,
            }
            if self.team.silent_types is not None:
                bus_options["silent_types"] = self.team.silent_types
            bus = await stack.enter_async_context(open_bus(self.team.bus, **bus_options))
            operator_bus = bus
            own = operator_bus_path(self.team)
            if own is not None:
                operator_bus = await stack.enter_async_context(open_bus(own, **bus_options))
            # Agents the team file admits from outside (`mnemara mcp`): replies to them are kept.
            await register_externals(bus, self.team.external)
            shared = None
            if self.team.shared_memory:
                shared = stack.enter_context(open_shared_memory(self.team.memory_dir))
            async with anyio.create_task_group() as services_tg:
                drivers = await self._start_drivers(services_tg)
                self._build(bus, operator_bus, drivers, shared)
                await services_tg.start(self.services.log.serve)
                await services_tg.start(self.alerts.serve)
                if self.services.loops is not None:  # an earlier life's chains go on
                    await self.services.loops.restore()
                    await services_tg.start(self.services.loops.serve)
                await services_tg.start(self.services.watch.serve)
                await services_tg.start(
                    partial(serve_inbox_counts, operator_bus=operator_bus), bus, self.panels
                )
                await self._record_start(leases)
                if swept:
                    pids, commands = tuple(o.pid for o in swept), tuple(o.command for o in swept)
                    self.services.log.emit(OrphansSwept(pids=pids, commands=commands))
                async with anyio.create_task_group() as panels_tg:
                    for runner in self.panels.values():
                        await panels_tg.start(
                            supervise, runner, self._tools(runner), self.policy, self.tickets
                        )
                    await self.services.log.write_status()
                    # On disk at once: `up` waits for this life's readiness.
                    await self.services.log.commit(
                        HostReady(panels=tuple(self.panels), life=self.life)
                    )
                    await services_tg.start(serve_control, self.db, self.dispatcher)
                    await services_tg.start(self.digests.serve)
                    task_status.started(self)
                    await self._stop.wait()
                    await self._drain(panels_tg)
                # Written before the services stop: emitted only, it could be cancelled
                # with the log's last flush and never reach disk or the listeners.
                await self.services.log.commit(HostStopped())
                services_tg.cancel_scope.cancel()

    def _lease_instances(self) -> list[Lease]:
        """Create the team's missing instances and lease every one; all or none."""
        owner = LeaseOwner.this_process(self.holder, team=self.team.name)
        leases: list[Lease] = []
        try:
            for spec in self.team.panels:
                paths, _ = ensure_instance(spec, self._home)
                leases.append(acquire_lease(paths, owner, action="start another host on it"))
        except BaseException:
            for lease in leases:
                lease.release()
            raise
        return leases

    async def _start_drivers(self, tg: anyio.abc.TaskGroup) -> DriverFactory:
        if self._drivers is not None:
            return self._drivers
        marker = marker_env(self.team.state_dir, self.life)
        sandbox = await anyio.to_thread.run_sync(self._sandbox)
        if self.team.rehearsal is None:
            return claude_drivers(state_dir=self.team.state_dir, marker=marker, sandbox=sandbox,
                                  spares=self.team.warm_spares)  # fmt: skip
        from runtime.rehearsal import RehearsalServer, load_script

        server = RehearsalServer(load_script(self.team.rehearsal))
        self.rehearsal = server
        url = await tg.start(server.serve)
        state_dir = self.team.state_dir
        return claude_drivers(
            rehearsal_url=url, state_dir=state_dir, marker=marker, sandbox=sandbox,
            spares=self.team.warm_spares,
        )  # fmt: skip

    def _sandbox(self) -> Sandbox | None:
        """The team's sandbox on this machine; sets `sandbox_note` to what it is."""
        found, note = team_sandbox(self.team, self._home)
        self.sandbox_note = told(note, self.team)
        return found

    def _build(
        self,
        bus: BusBackend,
        operator_bus: BusBackend,
        drivers: DriverFactory,
        shared: Memory | None = None,
    ) -> None:
        log = EventLog(self.db, interval=self.log_interval)
        for listener in self.listeners:
            log.listen(listener)
        for live in self.live_listeners:
            log.listen_live(live)
        self.services = HostServices(
            team=self.team,
            bus=bus,
            operator_bus=operator_bus,
            log=log,
            approvals=Approvals(),
            watch=BusWatch(bus, operator_bus, recheck=self.bus_recheck),
            drivers=drivers,
            slots=anyio.CapacityLimiter(self.team.max_concurrent_turns),
            home=self._home,
            redeliver_failed_input=self.redeliver_failed_input,
            shared_memory=shared,
        )
        for position, spec in enumerate(self.team.panels):
            runner = PanelRunner(spec, self.services, team_spends=self._spends)
            runner.position = position
            self.panels[spec.name] = runner
        # The team's message graph; each panel's host checks feed it and take its halts.
        # Wall-clock times: the graph's state outlives this process (host.sqlite).
        loops = LoopWatch(TeamGraph(self.loop_settings), emit=log.emit, clock=time.time,
                          wake=self._wake, store=self.db)  # fmt: skip
        self.services.loops = loops
        for runner in self.panels.values():
            runner.checks.watch_loops(loops, runner.name, partial(_turn_view, runner))
        log.track_status(lambda: [r.status_row() for r in self.panels.values()])
        self.dispatcher = Dispatcher(self.services, self.panels, self.tickets, self.request_stop)
        self.digests = DigestService(self.services, self.panels, settings=self.digest_settings)
        self.alerts = AlertService(self.team, log, self.quiet)  # calls the operator back
        log.listen(self.alerts.see)

    def _wake(self, name: str) -> None:
        """A loop halt is owed to `name`: its life's loop halts it now, not at its next message."""
        if name in self.panels:
            self.panels[name].wakeup.set()

    def _spends(self) -> list[Spend]:
        return [r.spent() for r in self.panels.values()]

    def _tools(self, runner: PanelRunner) -> list[ToolSpec]:
        # The names a panel may send to: its team's panels and the agents the team admits.
        names = frozenset(p.name for p in self.team.panels) | frozenset(self.team.external)
        port = PanelPort(runner.name, self.services.bus, names, runner.spec.listens_to,
                         runner.seen, lambda: runner.outbox)  # fmt: skip
        tools = bus_tools(port)
        if runner.spec.is_watchdog:
            tools += watchdog_tools(self, runner.name)
        return tools

    async def _record_start(self, leases: Sequence[Lease]) -> None:
        # Where each panel's instance lives and the team's role doc for it (empty: the
        # instance's own), so a viewer can read the store and role doc without the team file.
        files = {f"instance:{spec.name}": str(lease.paths.root)
                 for spec, lease in zip(self.team.panels, leases, strict=True)}  # fmt: skip
        files |= {f"role:{spec.name}": str(spec.role or "") for spec in self.team.panels}
        await self.db.set_meta({"team": self.team.name, "pid": str(os.getpid()),
                                "bus": redact(self.team.bus), "started": str(time.time()),
                                "operator_bus": self.services.operator_bus.location,
                                "source": str(self.team.source or ""), **files,
                                META_KEY: self.sandbox_note,  # every life: none left over
                                **budget_meta(self.team)})  # fmt: skip
        log = self.services.log
        log.emit(HostStarted(team=self.team.name, bus=redact(self.team.bus), pid=os.getpid(),
                             life=self.life))  # fmt: skip
        if self.sandbox_note.startswith(UNCONFINED) or SHARED in self.sandbox_note:
            log.emit(Warned(panel=None, message=self.sandbox_note))
        for lease in leases:
            if lease.stale_owner is not None:
                log.emit(LeaseTakenOver(panel=None, instance=lease.paths.name,
                                        previous=lease.stale_owner.describe()))  # fmt: skip
        await log.commit()  # a life that did anything has said it started

    async def _drain(self, panels_tg: anyio.abc.TaskGroup) -> None:
        """Stop claiming; give turns in flight `grace` seconds; then stop them and settle."""
        runners = list(self.panels.values())
        self.services.log.emit(HostStopping(grace=self.grace))
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

    # -- verbs -----------------------------------------------------------------------------------

    async def dispatch(self, verb: Verb, *, by: str = OPERATOR) -> Outcome:
        """Apply a verb given in this process (the REPL's); see dispatch.py."""
        return await self.dispatcher.apply(verb, by=by)

    async def act(self, verb: Verb, *, by: str) -> tuple[bool, str]:
        """A watchdog panel's verb (panels/watchdog/tools.py)."""
        outcome = await self.dispatcher.apply(verb, by=by)
        return outcome.ok, outcome.text

    async def quiet(self) -> bool:
        """No turn running, nothing waiting for a panel that may run, no digest due."""
        runners = list(self.panels.values())
        if any(r.in_turn for r in runners):
            return False
        bus, operator_bus = self.services.bus, self.services.operator_bus
        for runner in runners:
            if runner.halt is not None or runner.paused or runner.stopping:
                continue
            if await operator_bus.inbox(operator_route(runner.name), senders=(), limit=1):
                return False
            if runner.inbox_on and await bus.inbox(
                runner.name, senders=runner.spec.listens_to, limit=1
            ):
                return False
        return not self.digests.due()


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


def operator_bus_path(team: TeamSpec) -> Path | None:
    """The host's own bus file for operator input, or None when that is the team's bus.

    A team's bus named in its team file (a file or a PostgreSQL database), or a solo
    instance's `peer_db_path`, is read by other programs (the original mnemara, other
    hosts): operator input written there would be seen by all of them. It goes to
    `bus.sqlite` in the host's state dir instead, the file the team would use by default (a
    team file naming that very file needs no second one)."""
    if team.bus_is_default:
        return None
    own = team.state_dir / "bus.sqlite"
    shared = team.bus_file
    if shared is not None and own.resolve() == shared.expanduser().resolve():
        return None
    return own


def _turn_view(runner: PanelRunner) -> TurnView:
    """The turn in flight as the loop watch reads it: its input row id and its messages."""
    turn, session = runner.turn, runner.session
    key = session.last_turn_row if session is not None else None
    return (key, list(turn.delivered.values()) if turn is not None else [])


def budget_meta(team: TeamSpec) -> dict[str, str]:
    """The team's [team.budget] as meta values for viewers (the dashboard's header); 0: none."""
    budget = team.budget
    return {"budget_usd": str(budget.max_usd or 0), "budget_tokens": str(budget.max_tokens or 0)}
