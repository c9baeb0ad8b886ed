"""Lock-wait tail with N concurrent writer processes submitting single-row messages.

Every writer submits as fast as it can; each submit's wall time is its lock wait plus its
own commit. Reports the tail, the errors (there should be none: a lock held past
busy_timeout is retried with back-off), and the aggregate rate.

    .venv/bin/python bench/bus_lockwait.py --writers 8 --messages 300
    .venv/bin/python bench/bus_lockwait.py --writers 8 --messages 300 --no-gate
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def writer(path: Path, name: str, count: int, gate: bool) -> None:
    from peerbus import BusBusyError, BusOptions
    from peerbus.sqlite import close_bus, connect_bus, submit

    bus = connect_bus(path, BusOptions(writer_gate=gate))
    waits: list[float] = []
    errors = 0
    print("ready", flush=True)
    sys.stdin.readline()  # start together
    for seq in range(count):
        start = time.perf_counter()
        try:
            submit(bus, name, "sink", {"seq": seq, "text": "x" * 200})
        except BusBusyError:
            errors += 1
        waits.append(time.perf_counter() - start)
    close_bus(bus)
    print(json.dumps({"waits": waits, "errors": errors}), flush=True)


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--writers", type=int, default=8)
    parser.add_argument("--messages", type=int, default=300, help="per writer")
    parser.add_argument("--no-gate", action="store_true", help="writer_gate=False")
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        writer(Path(args.child[0]), args.child[1], args.messages, not args.no_gate)
        return

    from peerbus.sqlite import close_bus, connect_bus

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bus.sqlite"
        close_bus(connect_bus(path))
        extra = ["--no-gate"] if args.no_gate else []
        procs = [
            subprocess.Popen(
                [
                    sys.executable,
                    __file__,
                    "--messages",
                    str(args.messages),
                    *extra,
                    "--child",
                    str(path),
                    f"w{i}",
                ],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
            )
            for i in range(args.writers)
        ]
        for proc in procs:
            assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        start = time.perf_counter()
        for proc in procs:
            assert proc.stdin is not None
            proc.stdin.write("go\n")
            proc.stdin.flush()
        results = [json.loads(proc.communicate(timeout=300)[0]) for proc in procs]
        seconds = time.perf_counter() - start
        rows = connect_bus(path).conn.execute("SELECT count(*) FROM returns").fetchone()[0]

    waits = [w for r in results for w in r["waits"]]
    errors = sum(r["errors"] for r in results)
    print(
        f"writers={args.writers} messages/writer={args.messages} writer_gate={not args.no_gate} "
        "submits synchronous=FULL"
    )
    print(f"rows {rows}/{args.writers * args.messages}, BusBusyError {errors}")
    print(
        f"submit wall ms: p50 {pct(waits, 0.5):.2f}  p99 {pct(waits, 0.99):.2f}  "
        f"p99.9 {pct(waits, 0.999):.2f}  max {max(waits) * 1000:.2f}"
    )
    print(f"aggregate {len(waits) / seconds:,.0f} submits/s")


if __name__ == "__main__":
    main()
