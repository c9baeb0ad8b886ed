"""Cross-process delivery latency on the bus: submit in one process -> claim in another.

One producer (this process) and N recipient processes, each running the host's loop:
claim, ack, `wait_for_change`. The producer submits direct messages at a fixed rate to
random recipients, stamping the wall-clock send time in the payload; each recipient
records (claim time - send time). The original polled every 30 s or more.

    .venv/bin/python bench/bus_latency.py --recipients 8 --messages 2000 --rate 200
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


async def recipient(path: Path, role: str, backend_options: dict[str, object]) -> None:
    from peerbus import BusOptions, open_bus

    latencies: list[float] = []
    async with open_bus(path, options=BusOptions(**backend_options)) as bus:  # type: ignore[arg-type]
        await bus.register(role)
        print("ready", flush=True)
        while True:
            claim = await bus.claim(role, max_messages=100)
            now = time.time()
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
            if not claim.messages:
                await bus.wait_for_change(5.0, recipient=role)
    print(json.dumps(latencies), flush=True)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--recipients", type=int, default=8)
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
    options = {
        "poll_interval": args.poll_interval,
        "durable": not args.no_durable,
        "writer_gate": not args.no_gate,
    }

    if args.child:
        import anyio

        anyio.run(recipient, Path(args.child[0]), args.child[1], options, backend=args.backend)
        return

    from peerbus import BusOptions, close_bus, connect_bus, submit

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bus.sqlite"
        close_bus(connect_bus(path))
        roles = [f"r{i}" for i in range(args.recipients)]
        procs = [
            subprocess.Popen(
                [
                    sys.executable,
                    __file__,
                    "--backend",
                    args.backend,
                    "--poll-interval",
                    str(args.poll_interval),
                    "--child",
                    str(path),
                    role,
                    *(["--no-durable"] if args.no_durable else []),
                    *(["--no-gate"] if args.no_gate else []),
                ],
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
        for proc in procs:
            out, _ = proc.communicate(timeout=120)
            latencies += json.loads(out.strip().splitlines()[-1])

    ms = [x * 1000 for x in latencies]
    print(
        f"recipients={args.recipients} messages={args.messages} rate={args.rate}/s "
        f"backend={args.backend} poll_interval={args.poll_interval * 1000:.0f}ms "
        f"submits synchronous={'NORMAL' if args.no_durable else 'FULL'} "
        f"writer_gate={not args.no_gate}"
    )
    print(f"delivered {len(ms)}/{args.messages}")
    print(
        f"latency ms: p50 {percentile(ms, 0.5):.1f}  p90 {percentile(ms, 0.9):.1f}  "
        f"p99 {percentile(ms, 0.99):.1f}  max {max(ms):.1f}  mean {statistics.mean(ms):.1f}"
    )


if __name__ == "__main__":
    main()
