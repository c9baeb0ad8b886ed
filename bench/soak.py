"""Exactly-once delivery under crashes: kill a real host with SIGKILL again and again, then check.

    .venv/bin/python bench/soak.py [--kills R] [--messages N] [--cli] [--seed S] [--keep] [--json]
                                   [--burst B] [--no-faults] [--ring P] [--recreate K]

A producer and two engineers run in a real host process, started the way `mnemara up
--headless` runs one (`run_headless`, here through the hidden `--child` mode of this
script). The parent submits N operator messages `op-<n>` to the producer, in chunks over
the run; the producer forwards each as `task op-<n>` to eng1 or eng2, which answer
`done op-<n>` (soak_driver.py). The host is killed with SIGKILL R times, each life at one
moment of a shuffled mix: random (uniform after spawn), start-up (0-300 ms after the host
wrote its pid file), mid-turn (a turn began, then 0-25 ms), commit (right after a new
complete turn) and ack (right after a new done receipt); every killed child is reaped and
a new life started. A last life then runs until the bus is drained and is stopped with
SIGTERM, and the files are checked (soak_checks.py): lost, applied twice, published
twice, claimed or pending, interrupted copies left in a window, integrity, event log gaps,
leftover processes. The host's safety limits hit are counted and explained too: a send
refused for the turn's limit and then sent by the follow-up turn the host owes is expected;
a send refused and never sent, or a panel halted, fails the run (soak_probe.py).

Faults (scripted drivers, unless `--no-faults`; issue 30): the first life's ops and the
last ones go out as bursts of B (default 3 x what one turn may send) in one transaction,
so the producer's inbox holds more than a turn may answer; the drivers raise once on a
few ops after one send (soak_driver.py: `Faults`), and eng1 answers each task twice (a
reply and a note), so its full batches ask for more sends than a turn may make. (Table
recreation under load is `--recreate`, below.)

With `--ring P` (scripted drivers; issue 30's "burst through an 8-panel ring") the team is P
panels in a ring instead (soak_ring.py): ring0 takes the operator's ops and each op goes
once round, a new text at each hop, P + 1 bus rows an op; the bursts land at ring0 and move
round the ring in turn. Its faults: the panel half way round is chatty, ring0 and the last
panel raise. The figures add the messages through the ring and the follow-up turns run.

With `--recreate K` (scripted drivers) the team's bus is a foreign `returns` table, run in
compatibility mode, and K times while a host runs (lives spread over the run; with fewer
kills than K, in the last life once it has committed a few turns) the table is dropped and
created again in the same file, under its write lock (soak_recreate.py). What the
invariants mean then: each table is one generation with its own bus identity, its ids its
own. Rows of a dropped table that no turn consumed before it went are gone by the
operator's act: counted, not lost. Everything else holds over all the tables together:
nothing consumed twice, every consumed message's owed message sent (on some table), no text
sent twice, no outbox entry left unpublished; and every row of the last table consumed,
none claimed or pending.

With `--cli` the panels run the bundled Claude Code CLI against the rehearsal model
(soak_team.py writes the script); defaults then R=30, N=60.

Everything is under a fresh temp dir (removed unless `--keep`). Progress goes to stderr;
the figures (with the load average) to stdout, or one JSON object with `--json`. The exit
status is 1 when an invariant count is not 0, a limit was hit, the deadline was hit or the
last life did not stop cleanly; else 0.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import IO, Any

import anyio
from anyio.abc import Process

sys.path.insert(0, str(Path(__file__).parent))

from soak_checks import check_all, committed_turns
from soak_driver import (
    BATCH,
    ENGINEERS,
    FOLLOWED_UP,
    PRODUCER,
    Faults,
    engineer_for,
    run_child,
)
from soak_probe import Probe, Signals, count_marks, leftover_processes, limits_hit
from soak_protocol import PRODUCER_TEAM, Protocol, protocol_for, ring
from soak_recreate import (
    Generation,
    final_identity,
    merge,
    plan_recreations,
    recreate_when_followed,
    sidecar_of,
)
from soak_report import failed, report
from soak_ring import plan_ring_faults
from soak_state import TeamState, connect_ro, pending_now, read_state, unpublished_now
from soak_team import Workspace, make_workspace

from panels.host.delivery.feed import OPERATOR
from panels.host.process import read_pid_record
from peerbus import BusBackend, Outgoing, open_bus

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = Path(__file__).resolve()
POLL = 0.003
SUBMIT_WITHIN = 0.6  # a life's chunk of ops goes out this many seconds after spawn, at most
STOP_WITHIN = 60.0  # the last life's clean stop
KINDS = {"random": 0.25, "startup": 0.15, "mid_turn": 0.25, "commit": 0.2, "ack": 0.15}


@dataclass(frozen=True)
class Timing:
    """Seconds, per mode: the latest random kill, the longest wait after a turn start
    before a mid-turn kill, how long an aimed kill waits for its moment, and how long
    nothing must move before the drained bus counts as done."""

    random_max: float
    mid_turn_max: float
    aim_timeout: float
    quiet: float


SCRIPTED = Timing(random_max=2.5, mid_turn_max=0.025, aim_timeout=5.0, quiet=0.5)
# A CLI turn takes about a second (a fresh CLI process per turn).
CLI = Timing(random_max=6.0, mid_turn_max=1.5, aim_timeout=60.0, quiet=2.0)


@dataclass(frozen=True)
class Settings:
    kills: int
    messages: int
    cli: bool
    seed: int
    keep: bool
    deadline: float  # the whole run
    drain_timeout: float  # the last life's wait for a drained bus
    timing: Timing
    burst: int = 0  # ops submitted at once in the first life and at the end; 0: none
    faults: Faults | None = None
    ring: int = 0  # panels in the ring; 0: the producer and two engineers
    recreate: int = 0  # times the bus table is dropped and made again

    @property
    def protocol(self) -> Protocol:
        return ring(self.ring) if self.ring else PRODUCER_TEAM


def settings_from(args: argparse.Namespace) -> Settings:
    cli = bool(args.cli)
    kills = args.kills if args.kills is not None else (30 if cli else 100)
    # At least one op per killed life by default, so every aimed kill finds work to hit.
    fallback = max(kills, 60 if cli else 800)
    messages = args.messages if args.messages is not None else fallback
    if cli:
        deadline, drain = 300.0 + 60.0 * kills + 10.0 * messages, 120.0 + 5.0 * messages
    else:
        deadline, drain = 60.0 + 6.0 * kills + 0.2 * messages, 30.0 + 0.1 * messages
    injected = not cli and not args.no_faults
    burst = args.burst if args.burst is not None else 3 * BATCH
    faults = plan_ring_faults(args.ring, messages) if args.ring else plan_faults(messages)
    return Settings(
        kills=kills,
        messages=messages,
        cli=cli,
        seed=args.seed,
        keep=args.keep,
        deadline=args.deadline or deadline,
        drain_timeout=drain,
        timing=CLI if cli else SCRIPTED,
        burst=min(burst, messages // 3) if injected else 0,
        faults=faults if injected else None,
        ring=args.ring,
        recreate=args.recreate,
    )


def plan_faults(messages: int) -> Faults:
    """Drivers that raise once: the producer on two ops, each engineer on one of its own
    (spread over the run); eng1 (even ops) answers every task with two messages."""
    spread = [messages * k // 5 for k in (1, 2, 3, 4)]
    raises = {PRODUCER: frozenset(spread[:2])}
    for name, n in zip(ENGINEERS, spread[2:], strict=True):
        owned = n if engineer_for(n) == name else n + 1
        raises[name] = frozenset({owned} if owned < messages else ())
    return Faults(raises, frozenset(n for n in range(messages) if engineer_for(n) == "eng1"))


def kill_plan(rng: random.Random, kills: int) -> list[str]:
    """`kills` kinds in the proportions of KINDS (largest remainder), shuffled."""
    exact = {kind: share * kills for kind, share in KINDS.items()}
    counts = {kind: math.floor(x) for kind, x in exact.items()}
    by_remainder = sorted(KINDS, key=lambda k: exact[k] - counts[k], reverse=True)
    for kind in by_remainder[: kills - sum(counts.values())]:
        counts[kind] += 1
    plan = [kind for kind, n in counts.items() for _ in range(n)]
    rng.shuffle(plan)
    return plan


def chunks(total: int, parts: int) -> list[int]:
    parts = max(1, parts)
    return [total // parts + (1 if i < total % parts else 0) for i in range(parts)]


def op_text(n: int, *, cli: bool) -> str:
    return f"op-{n} for {engineer_for(n)}" if cli else f"op-{n}"


@dataclass
class Run:
    settings: Settings
    ws: Workspace
    probe: Probe
    log: IO[bytes]
    env: dict[str, str]
    rng: random.Random
    started: float = field(default_factory=time.monotonic)
    lives: int = 0
    kills: Counter[str] = field(default_factory=Counter)
    aimed_timeouts: Counter[str] = field(default_factory=Counter)
    exited_early: list[str] = field(default_factory=list)
    submitted: int = 0
    deadline_hit: bool = False
    recreations: Counter[int] = field(default_factory=Counter)  # life index -> how many
    dropped: list[Generation] = field(default_factory=list)
    recreations_missed: int = 0  # the bus had not followed the last one in time
    final: dict[str, Any] = field(default_factory=dict)
    last_progress: float = 0.0
    life_output: int = 0  # where the current life's output starts in host.out

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def progress(self, text: str, *, force: bool = False) -> None:
        if force or time.monotonic() - self.last_progress >= 5 or self.lives % 10 == 0:
            self.last_progress = time.monotonic()
            print(
                f"[soak {self.elapsed:6.1f} s] lives {self.lives}, kills "
                f"{sum(self.kills.values())}/{self.settings.kills}: {text}",
                file=sys.stderr,
                flush=True,
            )

    async def submit(
        self, bus: BusBackend, count: int, delay: float = 0.0, *, burst: bool = False
    ) -> None:
        await anyio.sleep(delay)
        if burst:  # one transaction: the whole chunk waits at once, more than a turn takes
            texts = [op_text(self.submitted + i, cli=self.settings.cli) for i in range(count)]
            route = self.settings.protocol.operator_route
            outgoing = [Outgoing(route, {"type": "message", "text": t}) for t in texts]
            await bus.submit_many(OPERATOR, outgoing)
            self.submitted += count
            return
        for _ in range(count):
            text = op_text(self.submitted, cli=self.settings.cli)
            route = self.settings.protocol.operator_route
            await bus.submit(OPERATOR, route, {"type": "message", "text": text})
            self.submitted += 1

    @asynccontextmanager
    async def child(self, what: str, life: str = "") -> AsyncIterator[Process]:
        """A host child for one life; however the block ends, the child is gone after it."""
        self.lives += 1
        life = life or uuid.uuid4().hex
        self.log.write(f"--- life {self.lives} {life} ({what})\n".encode())
        self.log.flush()
        self.life_output = self.log.tell()
        command = [sys.executable, str(SCRIPT), "--child", str(self.ws.team_file), "--life", life]
        proc = await anyio.open_process(
            command,
            cwd=ROOT,
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=self.log,
            stderr=self.log,
        )
        try:
            yield proc
        finally:
            if proc.returncode is None:
                proc.kill()  # the soak itself failed or was interrupted: leave no host behind
            # Reaped, so no zombie stays and the next life sees a dead pid in host.pid.
            with anyio.CancelScope(shield=True), anyio.move_on_after(10):
                await proc.wait()

    def last_words(self) -> str:
        """The last lines the current life printed (to say why it exited by itself)."""
        try:
            with self.ws.log.open("rb") as fh:
                fh.seek(self.life_output)
                lines = fh.read().decode(errors="replace").strip().splitlines()
        except OSError as exc:
            return f"(its output cannot be read: {exc})"
        return " | ".join(line.strip() for line in lines[-3:]) or "(nothing printed)"

    async def until(self, proc: Process, done: Callable[[Signals], bool]) -> bool:
        """Poll until `done` holds (True) or the child exits (False); callers bound the wait."""
        while proc.returncode is None:
            if done(self.probe.read()):
                return True
            await anyio.sleep(POLL)
        return False

    def moment(self, kind: str, proc: Process, before: Signals) -> Callable[[Signals], bool]:
        """When an aimed kill of `kind` is due (its delay, if any, comes after)."""
        aims: dict[str, Callable[[Signals], bool]] = {
            "startup": lambda _: self._pid_written(proc),
            "mid_turn": lambda s: s.starts > before.starts,
            "commit": lambda s: s.commits > before.commits,
            "ack": lambda s: s.acks > before.acks,
        }
        return aims[kind]

    async def killed_life(
        self, kind: str, bus: BusBackend, ops: int, *, burst: bool = False
    ) -> None:
        """One life, killed with SIGKILL at a moment of `kind`; `ops` are submitted meanwhile."""
        s = self.settings.timing
        async with self.child(kind) as proc, anyio.create_task_group() as tg:
            before = self.probe.read()
            # The chunk goes out while the host starts or runs, as an operator's input would.
            delay = self.rng.uniform(0, SUBMIT_WITHIN)
            tg.start_soon(partial(self.submit, bus, ops, delay, burst=burst))
            if self.recreations[self.lives - 1]:
                await anyio.sleep(self.rng.uniform(0.2, 0.8))
                await self.recreate_table(proc)
                before = self.probe.read()
            hit = True
            if kind == "random":
                await anyio.sleep(self.rng.uniform(0, s.random_max))
            else:
                hit = False
                with anyio.move_on_after(s.aim_timeout):
                    hit = await self.until(proc, self.moment(kind, proc, before))
                if kind == "startup":
                    await anyio.sleep(self.rng.uniform(0, 0.3))
                elif kind == "mid_turn":
                    await anyio.sleep(self.rng.uniform(0, s.mid_turn_max))
            if proc.returncode is not None:
                said = self.last_words()
                self.exited_early.append(
                    f"life {self.lives} ({kind}): exit status {proc.returncode}: {said}"
                )
                return
            proc.kill()
            self.kills[kind] += 1
            if not hit:
                self.aimed_timeouts[kind] += 1

    async def recreate_table(self, proc: Process) -> None:
        """This life's recreations of the bus table, while the host runs, each once the
        host has committed a few turns since it started (or the last one)."""
        for _ in range(self.recreations[self.lives - 1]):
            due = self.probe.read().commits + 5
            with anyio.move_on_after(10):
                await self.until(proc, partial(_committed, due))
            made = await recreate_when_followed(Path(self.ws.team.bus), within=10.0)
            if made is None:
                self.recreations_missed += 1
            else:
                self.dropped.append(made)
                self.progress(f"table made again ({len(made.rows)} rows gone with the old one)")

    def _pid_written(self, proc: Process) -> bool:
        record = read_pid_record(self.ws.team.pid_path)
        return record is not None and record.pid == proc.pid

    async def last_life(self) -> None:
        """A life left to finish: wait until the bus is drained, then SIGTERM and wait."""
        life = uuid.uuid4().hex
        async with self.child("final", life) as proc:
            t0 = time.monotonic()
            before = self.probe.read()
            with anyio.move_on_after(60):
                await self.until(proc, lambda s: life in s.ready or s.ready != before.ready)
            await self.recreate_table(proc)
            self.final["drained"] = await self.drained(proc)
            self.final["drain_seconds"] = round(time.monotonic() - t0, 2)
            proc.send_signal(signal.SIGTERM)
            with anyio.move_on_after(STOP_WITHIN):
                await proc.wait()
            if proc.returncode is None:
                self.final["stop"] = f"still running {STOP_WITHIN:.0f} s after SIGTERM; killed"
            else:
                self.final["stop"] = f"exit status {proc.returncode}"
            self.final["clean"] = proc.returncode == 0

    async def drained(self, proc: Process) -> bool:
        """Nothing pending on the bus or in an outbox, and nothing moved for a while."""
        s = self.settings
        expected = s.protocol.rows_per_op * s.messages if not s.cli else s.messages
        expected -= sum(len(g.rows) for g in self.dropped)
        sidecar = self.sidecar()
        end = time.monotonic() + min(s.drain_timeout, max(30.0, self.remaining()))
        last: tuple[int, ...] = ()
        changed = time.monotonic()
        while time.monotonic() < end and proc.returncode is None:
            try:
                conn = connect_ro(Path(self.ws.team.bus), sidecar)
                try:
                    pending = pending_now(conn, s.protocol.recipients)
                    rows = int(conn.execute("SELECT count(*) FROM returns").fetchone()[0])
                finally:
                    conn.close()
                pending += unpublished_now(self.ws.turns().values())
            except sqlite3.Error:  # busy for a moment, or mid-recovery: look again
                pending, rows = -1, 0
            sig = self.probe.read()
            now = (pending, rows, sig.starts, sig.commits, sig.acks)
            if now != last:
                last, changed = now, time.monotonic()
            quiet = s.timing.quiet if rows >= expected else max(s.timing.quiet, 3.0)
            if pending == 0 and time.monotonic() - changed >= quiet:
                return True
            await anyio.sleep(0.05)
        return False

    def remaining(self) -> float:
        return self.settings.deadline - self.elapsed

    def sidecar(self) -> Path | None:
        """The foreign bus's sidecar (`--recreate`), or None: the bus file holds its state."""
        return sidecar_of(Path(self.ws.team.bus)) if self.settings.recreate else None


async def soak(settings: Settings, root: Path) -> dict[str, Any]:
    ws = make_workspace(
        root,
        cli=settings.cli,
        messages=settings.messages,
        faults=settings.faults,
        protocol=settings.protocol,
        foreign_bus=settings.recreate > 0,
    )
    bus_path = Path(ws.team.bus)
    sidecar = sidecar_of(bus_path) if settings.recreate else None
    # The probe counts done receipts where the bus keeps them: a foreign table's sidecar.
    probe = Probe(
        marks=ws.marks, hostdb=ws.team.hostdb_path, bus=sidecar or bus_path, turns=ws.turns()
    )
    plan = kill_plan(random.Random(settings.seed), settings.kills)
    # One chunk of ops before each killed life: every life has work to be killed in. With a
    # burst, the first life's chunk is the burst and the last life's remainder another.
    first = settings.burst if settings.kills else 0
    parts = [first, *chunks(settings.messages - 2 * first, settings.kills - 1)] if first else []
    parts = parts or chunks(settings.messages, settings.kills)
    with ws.log.open("ab") as log:
        run = Run(settings, ws, probe, log, child_env(ws), random.Random(settings.seed + 1))
        run.recreations = plan_recreations(settings.recreate, len(plan) + 1)
        async with open_bus(Path(ws.team.bus)) as bus:
            for index, (kind, ops) in enumerate(zip(plan, parts, strict=False)):
                if run.remaining() <= 0:
                    run.deadline_hit = True
                    run.progress("deadline hit: no more kills", force=True)
                    break
                await run.killed_life(kind, bus, ops, burst=index == 0 and first > 0)
                run.progress(f"killed ({kind})")
            await run.submit(bus, settings.messages - run.submitted, burst=settings.burst > 0)
        run.progress("last life: drain, then SIGTERM", force=True)
        await run.last_life()
        if run.remaining() <= 0:
            run.deadline_hit = True
    probe.close()
    leftovers = await settle_leftovers(ws)
    state = read_state(bus_path, ws.team.hostdb_path, ws.turns(), sidecar)
    if settings.recreate:
        state = merge(state, run.dropped, final_identity(bus_path))
    # Derived messages (a forward per op, a reply per forward) are owed by the scripted
    # drivers only: the CLI's static rules forward one op per turn.
    invariants = check_all(state, derived=not settings.cli, protocol=settings.protocol)
    return {
        "mode": "cli" if settings.cli else "scripted",
        "seed": settings.seed,
        "kills_requested": settings.kills,
        "kills": sum(run.kills.values()),
        "kills_by_kind": dict(run.kills),
        "aimed_kills_timed_out": dict(run.aimed_timeouts),
        "exited_by_themselves": run.exited_early,
        "lives": run.lives,
        "messages": settings.messages,
        "bus_messages": len(state.rows),
        "turns": committed_turns(state),
        "wall_seconds": round(run.elapsed, 1),
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "cores": os.cpu_count(),
        "deadline_seconds": settings.deadline,
        "deadline_hit": run.deadline_hit,
        "final_life": run.final,
        "burst": settings.burst,
        "faults": json.loads(settings.faults.to_json()) if settings.faults else None,
        "limits_hit": limits_hit(ws.marks, state.events, state.rows),
        "follow_up_turns": count_marks(ws.marks, FOLLOWED_UP),
        "ring": ring_figures(settings, state) if settings.ring else None,
        "recreations": {
            "requested": settings.recreate,
            "done": len(run.dropped),
            "missed": run.recreations_missed,
            "rows_gone_with_tables": len(state.gone),
            "bus": "foreign table, compatibility mode" if settings.recreate else "owned",
        },
        "invariants": {
            **{i.name: i.as_dict() for i in invariants},
            "leftover processes": {
                "count": len(leftovers),
                "what": "processes with MNEMARA_HOST_STATE=<state dir> or the soak's dir in "
                "their environment or command line, and children of the soak still there",
                "parts": {},
                "notes": [],
                "examples": leftovers[:5],
            },
        },
        "workspace": str(root) if settings.keep else None,
    }


def _committed(due: int, signals: Signals) -> bool:
    return signals.commits >= due


def ring_figures(settings: Settings, state: TeamState) -> dict[str, int]:
    """Messages through the ring: every hop on the bus, and the ops that went all round."""
    size = settings.ring
    hops = [r for r in state.rows if r.sender.startswith("ring") and r.text.startswith("hop ")]
    laps = {r.text for r in hops if r.text.startswith(f"hop {size} ")}
    return {"panels": size, "hop_messages": len(hops), "ops_round": len(laps)}


async def settle_leftovers(ws: Workspace) -> list[str]:
    """Processes still there 2 s after the last life stopped (a host kills its CLIs)."""
    found: list[str] = []
    for _ in range(20):
        found = leftover_processes(scratch=ws.root, state_dir=ws.state_dir, parent=os.getpid())
        if not found:
            break
        await anyio.sleep(0.1)
    return found


def child_env(ws: Workspace) -> dict[str, str]:
    # No credentials or switches of the caller's own reach the host or its CLIs.
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("ANTHROPIC_", "CLAUDE_", "MNEMARA_"))
    }
    path = [str(ROOT), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    env.update(MNEMARA_HOME=str(ws.home), HOME=str(ws.user_home), PYTHONPATH=os.pathsep.join(path))
    return env


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kills", type=int, help="SIGKILLs (default 100; 30 with --cli)")
    parser.add_argument(
        "--messages",
        type=int,
        help="operator messages (800, 60 with --cli; never fewer than the kills by default)",
    )
    parser.add_argument("--cli", action="store_true", help="the bundled CLI, rehearsal model")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--keep", action="store_true", help="keep the temp dir")
    parser.add_argument("--json", action="store_true", help="one JSON object on stdout")
    parser.add_argument("--deadline", type=float, help="seconds for the whole run")
    parser.add_argument("--burst", type=int, help="ops submitted at once (default 3 turns' worth)")
    parser.add_argument("--no-faults", action="store_true", help="no bursts, raises or chatter")
    parser.add_argument("--ring", type=int, default=0, help="P panels in a ring (scripted)")
    parser.add_argument(
        "--recreate", type=int, default=0, help="drop and remake the bus table K times (scripted)"
    )
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--life", default="", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        run_child(
            args.child, args.life, lambda team: protocol_for(tuple(p.name for p in team.panels))
        )
        return
    if (args.ring or args.recreate) and args.cli:
        parser.error("--ring and --recreate run the scripted drivers only (not --cli)")
    if args.ring == 1 or args.ring < 0 or args.recreate < 0:
        parser.error("--ring needs 2 panels or more, and --recreate 0 or more")
    if (args.kills is not None and args.kills < 0) or (
        args.messages is not None and args.messages < 1
    ):
        parser.error("--kills must be 0 or more and --messages 1 or more")
    if args.deadline is not None and args.deadline <= 0:
        parser.error("--deadline must be more than 0 seconds (leave it out for the default)")
    settings = settings_from(args)
    root = Path(tempfile.mkdtemp(prefix="mnemara-soak-"))
    try:
        result = anyio.run(soak, settings, root, backend="trio")
    finally:
        if not settings.keep:
            shutil.rmtree(root, ignore_errors=True)
    if args.json:
        print(json.dumps(result, sort_keys=True))
    else:
        report(result)
        if settings.keep:
            print(f"kept: {root} (host.out has what every life printed)")
    sys.exit(1 if failed(result) else 0)


if __name__ == "__main__":
    main()
