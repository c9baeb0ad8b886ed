"""Cross-process delivery latency and CPU on the bus: submit in one process -> claim in another.

One producer (this process) and N recipient processes, each running a consumer's loop:
claim, ack, `wait_for_change` from that claim on (claiming again at once only after a
full batch). The producer submits direct messages at a fixed rate to
random recipients, stamping the wall-clock send time in the payload; each recipient
records (claim time - send time) and its own CPU time (getrusage user + sys, from ready
to stop). By default one invocation runs 2 and then 8 recipients with the same load, so
the two are compared side by side: the CPU the recipients spend per delivered message
should not grow with their number (a commit wakes only its addressee). The original
polled every 30 s or more.

Each run measures SQLite (a temp file) and then PostgreSQL with the same load, and prints
the two side by side: the PostgreSQL bus given by `--bus URL` (its bus tables emptied
before each case; a database whose bus holds anything is refused unless `--reset`), or
else a throwaway server the bench starts (tests/pgcluster.py's way, fsync on), or SQLite
alone when none can be started. On PostgreSQL the server's CPU is shown too when the
server is the bench's own. Last, an idle PostgreSQL consumer's CPU over `--idle-seconds`
(as bench/bus_idle_cpu.py measures SQLite's): no busy polling when nothing happens.

    .venv/bin/python bench/bus_latency.py                 # 2 and 8 recipients
    .venv/bin/python bench/bus_latency.py --recipients 8 --messages 2000 --rate 200
    .venv/bin/python bench/bus_latency.py --bus postgresql://me@db.example/benchbus
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bus_idle_cpu import bare_sleep, cpu_seconds, idle
from bus_latency_report import Trial, passed, print_side_by_side, print_trials, verdict
from pgserver import PgTarget, TargetError, bus_parser, load, open_pg_target

P99_TARGET_MS = 10.0  # at 8 recipients, unloaded
PG_P99_TARGET_MS = 20.0  # PostgreSQL on loopback, at 8 recipients
IDLE_TARGET = 0.3  # percent of one core, an idle consumer's own
BATCH = 100  # messages per claim
LOCATION_ENV = "MNEMARA_BENCH_BUS"  # the children's bus: not in argv, where ps shows it


def switches() -> tuple[int, int]:
    """Context switches so far: (voluntary, involuntary: preempted by another process)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_nvcsw, usage.ru_nivcsw


async def recipient(path: str, role: str, backend_options: dict[str, object]) -> None:
    from peerbus import BusOptions, open_bus

    latencies: list[float] = []
    claims = empty = 0
    async with open_bus(path, options=BusOptions(**backend_options)) as bus:  # type: ignore[arg-type]
        await bus.register(role)
        cpu0, (vol0, invol0) = cpu_seconds(), switches()
        print("ready", flush=True)
        while True:
            claim = await bus.claim(role, max_messages=BATCH)
            now = time.time()
            claims += 1
            empty += not claim.messages
            stop = False
            for message in claim.messages:
                if message.payload.get("stop"):
                    stop = True
                else:
                    latencies.append(now - float(message.payload["sent_at"]))
            if claim.messages:
                await bus.ack(claim)
            if stop:
                break
            # A full batch may have left more behind: claim again. Otherwise wait from this
            # claim on: a message that came after it wakes the wait at once.
            if len(claim.messages) < BATCH:
                await bus.wait_for_change(5.0, recipient=role)
        cpu, (vol, invol) = cpu_seconds() - cpu0, switches()
    report = {
        "latencies": latencies,
        "cpu": cpu,
        "claims": claims,
        "empty": empty,
        "preempted": invol - invol0,
        "switches": vol - vol0,
    }
    print(json.dumps(report), flush=True)


def produce_sqlite(args: argparse.Namespace, path: Path, roles: list[str]) -> None:
    from peerbus import BusOptions
    from peerbus.sqlite import close_bus, connect_bus, submit

    bus = connect_bus(path, BusOptions(durable=not args.no_durable, writer_gate=not args.no_gate))
    rng = random.Random(1)
    start = time.monotonic()
    for seq in range(args.messages):
        due = start + seq / args.rate
        delay = due - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        submit(bus, "producer", rng.choice(roles), {"sent_at": time.time(), "seq": seq})
    for role in roles:
        submit(bus, "producer", role, {"stop": True})
    close_bus(bus)


async def produce_async(args: argparse.Namespace, location: str, roles: list[str]) -> None:
    """The SQLite producer's schedule through the async API (PostgreSQL has no other)."""
    import anyio

    from peerbus import open_bus

    async with open_bus(location) as bus:
        rng = random.Random(1)
        start = time.monotonic()
        for seq in range(args.messages):
            delay = start + seq / args.rate - time.monotonic()
            if delay > 0:
                await anyio.sleep(delay)
            payload = {"sent_at": time.time(), "seq": seq}
            await bus.submit("producer", rng.choice(roles), payload)
        for role in roles:
            await bus.submit("producer", role, {"stop": True})


def run_trial(args: argparse.Namespace, count: int, pg: PgTarget | None = None) -> Trial:
    """One trial on SQLite (a temp file), or on PostgreSQL when `pg` is given."""
    import anyio

    from peerbus.sqlite import close_bus, connect_bus

    child_flags = [
        "--backend",
        args.backend,
        "--poll-interval",
        str(args.poll_interval),
        *(["--no-durable"] if args.no_durable else []),
        *(["--no-gate"] if args.no_gate else []),
    ]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bus.sqlite"
        if pg is None:
            location = str(path)
            close_bus(connect_bus(path))
        else:
            location = pg.fresh()
        roles = [f"r{i}" for i in range(count)]
        server0 = None if pg is None else pg.server_cpu()
        procs = [
            subprocess.Popen(
                [sys.executable, __file__, *child_flags, "--child", role],
                stdout=subprocess.PIPE,
                text=True,
                env={**os.environ, LOCATION_ENV: location},
            )
            for role in roles
        ]
        for proc in procs:
            assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        if pg is None:
            produce_sqlite(args, path, roles)
        else:
            anyio.run(produce_async, args, location, roles, backend=args.backend)
        latencies: list[float] = []
        cpu = 0.0
        claims = empty = voluntary = preempted = 0
        for proc in procs:
            out, _ = proc.communicate(timeout=120)
            report = json.loads(out.strip().splitlines()[-1])
            latencies += report["latencies"]
            cpu += float(report["cpu"])
            claims += int(report["claims"])
            empty += int(report["empty"])
            voluntary += int(report["switches"])
            preempted += int(report["preempted"])
        server1 = None if pg is None else pg.server_cpu()
    server = None if server0 is None or server1 is None else server1 - server0
    ms = [x * 1000 for x in latencies]
    return Trial(count, ms, cpu, claims, empty, voluntary, preempted, load(), server)


def parse_args() -> argparse.Namespace:
    parser = bus_parser(__doc__)
    parser.add_argument(
        "--recipients", default="2,8", help="comma-separated recipient counts (default 2,8)"
    )
    parser.add_argument("--messages", type=int, default=2000)
    parser.add_argument("--rate", type=float, default=200.0, help="messages per second")
    parser.add_argument("--backend", choices=["asyncio", "trio"], default="trio")
    parser.add_argument("--poll-interval", type=float, default=0.01)
    parser.add_argument(
        "--no-durable", action="store_true", help="synchronous=NORMAL instead of FULL"
    )
    parser.add_argument("--child", metavar="ROLE", help=argparse.SUPPRESS)
    parser.add_argument("--no-gate", action="store_true", help="writer_gate=False")
    parser.add_argument(
        "--idle-seconds", type=float, default=20.0,
        help="the idle PostgreSQL consumer's measured window (0: skip; default 20)",
    )  # fmt: skip
    parser.add_argument(
        "--idle-warmup", type=float, default=10.0,
        help="quiet seconds before that window (default 10)",
    )  # fmt: skip
    args = parser.parse_args()
    if args.child:
        return args
    try:
        args.counts = [int(c) for c in args.recipients.split(",")]
    except ValueError:
        parser.error("--recipients takes whole numbers separated by commas, such as 2,8")
    if min(args.counts) < 1 or args.messages < 1 or args.rate <= 0 or args.poll_interval <= 0:
        parser.error("--recipients and --messages must be >= 1, --rate and --poll-interval > 0")
    if args.idle_seconds < 0 or args.idle_warmup < 0:
        parser.error("--idle-seconds and --idle-warmup must be >= 0")
    args.parser = parser
    return args


def main() -> None:
    args = parse_args()
    if args.child:
        import anyio

        options = {
            "poll_interval": args.poll_interval,
            "durable": not args.no_durable,
            "writer_gate": not args.no_gate,
        }
        location = os.environ[LOCATION_ENV]
        anyio.run(recipient, location, args.child, options, backend=args.backend)
        return
    try:
        with open_pg_target(args.bus, args.reset) as pg:
            run(args, pg)
    except TargetError as exc:
        args.parser.error(str(exc))


def run(args: argparse.Namespace, pg: PgTarget | str) -> None:
    import anyio

    print(
        f"messages={args.messages} rate={args.rate}/s backend={args.backend} "
        f"poll_interval={args.poll_interval * 1000:.0f}ms "
        f"submits synchronous={'NORMAL' if args.no_durable else 'FULL'} "
        f"writer_gate={not args.no_gate}"
    )
    where = pg if isinstance(pg, str) else pg.describe
    skipped = isinstance(pg, str)
    print(f"postgresql: {'SKIPPED: ' if skipped else ''}{where}")
    print("[sqlite, a temp file]")
    before = [load() for _ in args.counts]
    trials: list[Trial] = []
    for i, count in enumerate(args.counts):
        before[i] = load()
        trials.append(run_trial(args, count))
    print_trials(args, trials, before)
    for trial in trials:
        if trial.recipients == 8:
            print(
                f"p99 at 8 recipients = {trial.p99:.1f} ms (<= {P99_TARGET_MS:.0f} ms): "
                f"{verdict(trial.p99 <= P99_TARGET_MS)}  ({load()})"
            )
    if isinstance(pg, str):
        print(f"[postgresql SKIPPED: {pg}]")
        return
    print("[postgresql, the producer submitting through the async API]")
    pg_trials: list[Trial] = []
    for i, count in enumerate(args.counts):
        before[i] = load()
        pg_trials.append(run_trial(args, count, pg))
    print_trials(args, pg_trials, before)
    print_side_by_side(trials, pg_trials)
    eights = [t for t in pg_trials if t.recipients == 8]
    for trial in eights:
        print(
            f"postgresql delivery p99 at 8 recipients = {trial.p99:.1f} ms "
            f"(<= {PG_P99_TARGET_MS:.0f} ms): {passed(trial.p99 <= PG_P99_TARGET_MS)}  "
            f"({trial.load})"
        )
    if not eights:
        print("postgresql delivery p99 at 8 recipients: not measured (--recipients has no 8)")
    if args.idle_seconds > 0:
        location = pg.fresh()
        share, wakes = anyio.run(
            idle, location, args.idle_seconds, args.idle_warmup, {}, backend=args.backend
        )
        floor = anyio.run(bare_sleep, args.idle_seconds, backend=args.backend)
        own = (share - floor) * 100
        print(
            f"postgresql idle consumer over {args.idle_seconds:.0f} s (after "
            f"{args.idle_warmup:.0f} s quiet): CPU {share * 100:.2f}% of a core, a bare sleep "
            f"{floor * 100:.2f}%, the waiter's own {own:.2f}% (< {IDLE_TARGET}%): "
            f"{passed(own < IDLE_TARGET)}  (wake-ups: {wakes}; {load()})"
        )


if __name__ == "__main__":
    main()
