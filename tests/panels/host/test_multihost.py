"""Two hosts, one PostgreSQL bus: 200 ops across machines, a SIGKILL and a server restart.

Host A runs team `alpha` (the producer), host B team `beta` (eng1, eng2), each as its own
process with its own MNEMARA_HOME, both on one database of the throwaway server
(tests/pgcluster.py). The test is the dispatcher: it submits `op-<n>` to the producer on
the shared bus in chunks; the producer forwards `task op-<n>` to an engineer on host B,
which answers `done op-<n>` (bench/multihost_team.py). Mid-stream host B is killed with
SIGKILL inside a turn and started again, and later the server is restarted while both hosts
run. Once the producer has consumed every `done`, both hosts get SIGTERM and must exit 0;
then the bus (through the protocol) and every store are checked (bench/multihost_checks.py).
"""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import sys
import uuid
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import pytest
from anyio.abc import Process, TaskGroup

from peerbus import BusBackend, open_bus, redact
from tests.pgcluster import PgCluster, pg_cluster, pg_url  # noqa: F401 (fixtures)

ROOT = Path(__file__).resolve().parents[3]
BENCH = ROOT / "bench"
sys.path.insert(0, str(BENCH))

from multihost_checks import check_multihost, describe, read_bus_end  # noqa: E402
from multihost_net import NetnsUnavailable, open_netns, relay_url, serve_relay  # noqa: E402
from multihost_team import DISPATCHER, SCRIPT, HostDir, make_hosts  # noqa: E402
from soak_driver import PRODUCER, reply_text  # noqa: E402
from soak_state import payload_text, read_events, read_store  # noqa: E402

pytestmark = pytest.mark.slow

# 40 ops a chunk: each phase (before the kill, across it, across the server restart, after)
# carries work in flight; the crash soak (bench/soak.py) is where volume is measured. Two
# chunks before the kill, two across it, then the restart and one more: every phase a
# chunk or two, not three or four (which only added volume, 10-15 s of it under load).
OPS = 200
CHUNKS = 5
KILL_B_AFTER = 2  # chunks submitted before host B is killed
RESTART_PG_AFTER = 4  # chunks submitted before the server restarts
READY_WITHIN = 60.0
DONE_WITHIN = 600.0  # every `done op-n` consumed by the producer, from the last chunk on
STOP_WITHIN = 60.0


@dataclass
class HostProc:
    """One host's lives: started as `mnemara up --headless` would run it, output to a file."""

    dir: HostDir
    env: dict[str, str]
    prefix: list[str]  # runs the host in its network namespace; [] on loopback
    proc: Process | None = None
    life: str = ""
    lives: list[str] = field(default_factory=list)

    async def start(self) -> None:
        self.life = uuid.uuid4().hex
        self.lives.append(self.life)
        with self.dir.log.open("ab") as log:
            log.write(f"--- life {len(self.lives)} {self.life}\n".encode())
            log.flush()
            command = [*self.prefix, sys.executable, str(SCRIPT), "--child",
                       str(self.dir.team_file), "--life", self.life]  # fmt: skip
            self.proc = await anyio.open_process(
                command, cwd=ROOT, env=self.env, stdin=subprocess.DEVNULL, stdout=log, stderr=log
            )

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.returncode is None

    def ready(self) -> bool:
        try:
            events = read_events(self.dir.team.hostdb_path)
        except sqlite3.Error:
            return False  # not created yet, or busy for a moment
        return any(e.kind == "host_ready" and e.data.get("life") == self.life for e in events)

    async def wait_ready(self) -> None:
        with anyio.fail_after(READY_WITHIN):
            while not self.ready():
                self.check_alive()
                await anyio.sleep(0.1)

    def check_alive(self) -> None:
        if not self.alive:
            code = None if self.proc is None else self.proc.returncode
            pytest.fail(
                f"host {self.dir.name} is not running (exit status {code}):\n{self.last_words()}"
            )

    async def stop(self, sig: signal.Signals) -> int | None:
        """Send `sig` and reap the process; its exit status (None: it outlived STOP_WITHIN)."""
        assert self.proc is not None
        self.proc.send_signal(sig)
        with anyio.move_on_after(STOP_WITHIN):
            await self.proc.wait()
        if self.proc.returncode is None:
            self.proc.kill()
            with anyio.CancelScope(shield=True), anyio.move_on_after(10):
                await self.proc.wait()
            return None
        return self.proc.returncode

    def last_words(self, lines: int = 15) -> str:
        try:
            text = self.dir.log.read_text(errors="replace")
        except OSError as exc:
            return f"(no output: {exc})"
        tail = text.strip().splitlines()[-lines:]
        return "\n".join(f"  [host {self.dir.name}] {line}" for line in tail)


def marks(host: HostDir) -> tuple[int, int]:
    """Turn starts and ends the host's drivers have marked so far (all lives)."""
    try:
        lines = host.marks.read_bytes().splitlines()
    except FileNotFoundError:
        return 0, 0
    return sum(x.startswith(b"start ") for x in lines), sum(x.startswith(b"end ") for x in lines)


async def kill_in_turn(host: HostProc, rng: random.Random) -> tuple[int, int]:
    """SIGKILL the host just after one of its turns started; the marks at that moment."""
    before, _ = marks(host.dir)
    with anyio.fail_after(60):
        while marks(host.dir)[0] <= before:
            host.check_alive()
            await anyio.sleep(0.002)
    await anyio.sleep(rng.uniform(0, 0.02))
    at = marks(host.dir)
    host.check_alive()
    assert host.proc is not None
    host.proc.kill()
    with anyio.fail_after(10):
        await host.proc.wait()
    return at


def consumed_dones(host: HostDir, done_ids: set[int]) -> int:
    """How many of `done_ids` the producer's committed turns have consumed (-1: unreadable)."""
    try:
        store = read_store(PRODUCER, host.turns()[PRODUCER])
    except sqlite3.Error:
        return -1  # busy for a moment: look again
    eaten = {i for ids in store.complete.values() for i in ids}
    eaten |= {i for i, _ in store.delivered or ()}
    return len(done_ids & eaten)


async def wait_all_done(bus: BusBackend, a: HostProc, b: HostProc) -> str:
    """Until the producer consumed a `done op-n` for every n; fails past DONE_WITHIN."""
    wanted = {reply_text(n) for n in range(OPS)}
    with anyio.fail_after(DONE_WITHIN):
        while True:
            a.check_alive()
            b.check_alive()
            dump = await bus.export_dump()
            dones = {
                r.id: text
                for r in dump.rows
                if r.recipient_role == PRODUCER
                and (text := payload_text(r.payload_json)).startswith("done ")
            }
            seen = consumed_dones(a.dir, set(dones))
            if wanted <= set(dones.values()) and seen == len(dones):
                return f"all {len(dones)} done rows consumed by the producer"
            await anyio.sleep(0.5)


def child_env(host: HostDir) -> dict[str, str]:
    # The host's own machine: its homes only; nothing of the caller's credentials or switches.
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("ANTHROPIC_", "CLAUDE_", "MNEMARA_", "PG"))
    }
    path = [str(ROOT), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    env.update(MNEMARA_HOME=str(host.home), HOME=str(host.user_home))
    env["PYTHONPATH"] = os.pathsep.join(path)
    return env


@dataclass
class Run:
    """One run: the hosts (once made), what happened, and the network they reach the bus by."""

    root: Path
    cluster: PgCluster
    url: str
    hosts: list[HostProc] = field(default_factory=list)
    timeline: list[str] = field(default_factory=list)

    async def network(self, stack: AsyncExitStack, tg: TaskGroup) -> list[tuple[list[str], str]]:
        """(command prefix, bus URL) for host A and host B: each in a network namespace of
        its own behind a relay to the server when this machine allows it, else loopback."""
        tag, subnet = str(os.getpid()), os.getpid() % 120 * 2
        try:
            spaces = [
                stack.enter_context(open_netns(f"{tag}{x}", subnet + i)) for i, x in enumerate("ab")
            ]
        except NetnsUnavailable as exc:
            self.timeline.append(f"network: two processes on loopback ({exc})")
            return [([], self.url), ([], self.url)]
        links = []
        for space in spaces:
            port = await tg.start(serve_relay, space.outside, self.cluster.port)
            links.append((space.command([]), relay_url(self.url, space.outside, port)))
        self.timeline.append(
            "network: each host in its own network namespace: "
            + ", ".join(f"{s.name} ({s.inside} -> {s.outside})" for s in spaces)
        )
        return links

    async def scenario(self) -> None:
        async with AsyncExitStack() as stack, anyio.create_task_group() as tg:
            links = await self.network(stack, tg)
            dirs = make_hosts(self.root, links[0][1], links[1][1])
            pairs = zip(dirs, links, strict=True)
            self.hosts = [HostProc(d, child_env(d), prefix) for d, (prefix, _) in pairs]
            try:
                await self.exchange(*self.hosts)
            finally:
                for host in self.hosts:
                    if host.alive:
                        await host.stop(signal.SIGKILL)
                tg.cancel_scope.cancel()  # the relays

    async def exchange(self, a: HostProc, b: HostProc) -> None:
        rng = random.Random(13)
        sizes = [OPS // CHUNKS + (1 if i < OPS % CHUNKS else 0) for i in range(CHUNKS)]
        async with open_bus(self.url) as bus:
            await a.start()
            await b.start()
            await a.wait_ready()
            await b.wait_ready()
            sent = 0
            for chunk, size in enumerate(sizes, 1):
                for n in range(sent, sent + size):
                    await bus.submit(DISPATCHER, PRODUCER, {"type": "message", "text": f"op-{n}"})
                sent += size
                if chunk == KILL_B_AFTER:
                    starts, ends = await kill_in_turn(b, rng)
                    self.timeline.append(
                        f"host B killed (SIGKILL) after {sent} ops, its turn marks "
                        f"{starts} started / {ends} ended; new life started"
                    )
                    await b.start()
                    await b.wait_ready()
                elif chunk == RESTART_PG_AFTER:
                    a.check_alive()
                    b.check_alive()
                    await anyio.to_thread.run_sync(self.cluster.restart)
                    self.timeline.append(f"server restarted after {sent} ops, both hosts running")
                else:
                    await anyio.sleep(0.3)
            try:
                self.timeline.append(await wait_all_done(bus, a, b))
            except TimeoutError:
                # What is missing, while the hosts still run (their files read-only).
                missing = describe(check_multihost(await read_bus_end(bus), [a.dir, b.dir], OPS))
                pytest.fail(
                    f"the producer did not consume every `done op-n` within {DONE_WITHIN:.0f} "
                    f"s; what the checks find now:\n{missing}",
                    pytrace=False,
                )
            codes = [await a.stop(signal.SIGTERM), await b.stop(signal.SIGTERM)]
            self.timeline.append(f"exit status on SIGTERM: A {codes[0]}, B {codes[1]}")
            assert codes == [0, 0], "a host did not exit 0 on SIGTERM (None: still running)"
            end = await read_bus_end(bus)
        for host in (a, b):
            said = host.dir.log.read_text(errors="replace").count("reconnect")
            self.timeline.append(f"host {host.dir.name} printed {said} line(s) on reconnecting")
        again = sum(1 for r in end.dump.receipts if r.deliveries > 1)
        self.timeline.append(f"{again} receipt(s) delivered more than once (redeliveries)")
        invariants = check_multihost(end, [a.dir, b.dir], OPS)
        self.timeline += [f"note ({i.name}): {n}" for i in invariants for n in i.notes]
        assert all(i.count == 0 for i in invariants), describe(invariants)
        assert len(end.dump.rows) == 3 * OPS, f"{len(end.dump.rows)} rows on the bus"

    def post_mortem(self) -> str:
        lines = [f"bus {redact(self.url)}", *self.timeline]
        for host in self.hosts:
            lines += [f"host {host.dir.name}: {len(host.lives)} life(s)", host.last_words(25)]
        return "\n".join(lines)


def test_two_hosts_on_one_postgresql_bus_lose_and_repeat_nothing(
    tmp_path: Path,
    pg_cluster: PgCluster,  # noqa: F811
    pg_url: str,  # noqa: F811
) -> None:
    run = Run(tmp_path, pg_cluster, pg_url)
    try:
        anyio.run(run.scenario, backend="trio")
    except BaseException as exc:
        print(run.post_mortem())  # pytest shows it with the failure
        while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
            exc = exc.exceptions[0]  # the one failure, not the task groups that carried it
        raise exc from None
    print("\n".join(run.timeline))
