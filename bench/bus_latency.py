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

    .venv/bin/python bench/bus_latency.py                 # 2 and 8 recipients
    .venv/bin/python bench/bus_latency.py --recipients 8 --messages 2000 --rate 200
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

CPU_RATIO_TARGET = 1.3  # CPU per message at the most recipients vs at the fewest
P99_TARGET_MS = 10.0  # at 8 recipients, unloaded
BATCH = 100  # messages per claim


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def switches() -> tuple[int, int]:
    """Context switches so far: (voluntary, involuntary: preempted by another process)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_nvcsw, usage.ru_nivcsw


async def recipient(path: Path, role: str, backend_options: dict[str, object]) -> None:
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


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def load() -> str:
    return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())


@dataclass(frozen=True)
class Trial:
    recipients: int
    latencies_ms: list[float]
    cpu: float  # seconds, summed over the recipient processes
    claims: int  # claims made, and those that found nothing (a wake-up for nothing, or
    empty: int  # the look after a batch that finds the inbox empty)
    switches: int  # context switches of the recipients: voluntary (waits, locks) and
    preempted: int  # involuntary (another process took the core)

    @property
    def cpu_per_message_ms(self) -> float:
        return self.cpu / max(1, len(self.latencies_ms)) * 1000

    @property
    def p99(self) -> float:
        return percentile(self.latencies_ms, 0.99)


def run_trial(args: argparse.Namespace, count: int) -> Trial:
    from peerbus import BusOptions, close_bus, connect_bus, submit

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
        close_bus(connect_bus(path))
        roles = [f"r{i}" for i in range(count)]
        procs = [
            subprocess.Popen(
                [sys.executable, __file__, *child_flags, "--child", str(path), role],
                stdout=subprocess.PIPE,
                text=True,
            )
            for role in roles
        ]
        for proc in procs:
            assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        bus = connect_bus(
            path, BusOptions(durable=not args.no_durable, writer_gate=not args.no_gate)
        )
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
    return Trial(count, [x * 1000 for x in latencies], cpu, claims, empty, voluntary, preempted)


def verdict(ok: bool) -> str:
    return "met" if ok else "MISSED"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
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
    parser.add_argument("--child", nargs=2, metavar=("PATH", "ROLE"), help=argparse.SUPPRESS)
    parser.add_argument("--no-gate", action="store_true", help="writer_gate=False")
    args = parser.parse_args()

    if args.child:
        import anyio

        options = {
            "poll_interval": args.poll_interval,
            "durable": not args.no_durable,
            "writer_gate": not args.no_gate,
        }
        anyio.run(recipient, Path(args.child[0]), args.child[1], options, backend=args.backend)
        return

    try:
        counts = [int(c) for c in args.recipients.split(",")]
    except ValueError:
        parser.error("--recipients takes whole numbers separated by commas, such as 2,8")
    if min(counts) < 1 or args.messages < 1 or args.rate <= 0 or args.poll_interval <= 0:
        parser.error("--recipients and --messages must be >= 1, --rate and --poll-interval > 0")
    print(
        f"messages={args.messages} rate={args.rate}/s backend={args.backend} "
        f"poll_interval={args.poll_interval * 1000:.0f}ms "
        f"submits synchronous={'NORMAL' if args.no_durable else 'FULL'} "
        f"writer_gate={not args.no_gate}"
    )
    trials: list[Trial] = []
    for count in counts:
        before = load()
        trial = run_trial(args, count)
        trials.append(trial)
        ms = trial.latencies_ms
        print(f"recipients={count}: delivered {len(ms)}/{args.messages}  ({before} -> {load()})")
        print(
            f"  latency ms: p50 {percentile(ms, 0.5):.1f}  p90 {percentile(ms, 0.9):.1f}  "
            f"p99 {trial.p99:.1f}  max {max(ms):.1f}  mean {statistics.mean(ms):.1f}"
        )
        print(
            f"  recipients' CPU {trial.cpu:.2f} s = {trial.cpu_per_message_ms:.3f} ms "
            f"per delivered message; {trial.claims} claims, {trial.empty} empty; "
            f"context switches {trial.switches}, preempted {trial.preempted}"
        )
    if len(trials) >= 2:
        low, high = trials[0], trials[-1]
        ratio = high.cpu_per_message_ms / low.cpu_per_message_ms
        print(
            f"cpu per message {high.recipients} vs {low.recipients} = {ratio:.2f}x "
            f"(<= {CPU_RATIO_TARGET}x): {verdict(ratio <= CPU_RATIO_TARGET)}  ({load()})"
        )
    for trial in trials:
        if trial.recipients == 8:
            print(
                f"p99 at 8 recipients = {trial.p99:.1f} ms (<= {P99_TARGET_MS:.0f} ms): "
                f"{verdict(trial.p99 <= P99_TARGET_MS)}  ({load()})"
            )


if __name__ == "__main__":
    main()
