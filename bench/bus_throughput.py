"""Bus throughput in one process: submits (single-row and batched), and claim+ack drains.

One run measures SQLite (temp files; first its sync functions, as before) and then the
same async workload on SQLite and on PostgreSQL, printed side by side: the PostgreSQL bus
given by `--bus URL` (its bus tables emptied before each case; a database whose bus holds
anything is refused unless `--reset`), or else a throwaway server the bench starts
(tests/pgcluster.py's way, fsync on), or SQLite alone when none can be started.

.venv/bin/python bench/bus_throughput.py --messages 3000
.venv/bin/python bench/bus_throughput.py --bus postgresql://me@db.example/benchbus
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

import anyio
from pgserver import PgTarget, TargetError, bus_parser, load, open_pg_target

from peerbus import BusOptions, Outgoing, open_bus
from peerbus.sqlite import (
    BusFile,
    ack,
    claim_batch,
    close_bus,
    connect_bus,
    submit,
    submit_many,
)

PAYLOAD = {"type": "review", "text": "x" * 200}  # about 250 B, as in the stack findings


def report(label: str, count: int, seconds: float) -> str:
    """Print one figure with the load average; return it as the side-by-side cell."""
    rate = count / seconds
    print(f"{label:<52} {rate:>9,.0f} msg/s  ({seconds * 1e6 / count:,.0f} µs each)  ({load()})")
    return f"{rate:,.0f} msg/s [{load().split(' ', 2)[2]}]"


def timed(label: str, count: int, run: Callable[[], object]) -> str:
    start = time.perf_counter()
    run()
    return report(label, count, time.perf_counter() - start)


def drain(path: Path, batch: int) -> None:
    bus = connect_bus(path, BusOptions())
    try:
        while True:
            claim = claim_batch(bus, "b", max_messages=batch, max_tokens=10**9)
            if not claim.messages:
                return
            ack(bus, claim)
    finally:
        close_bus(bus)


def submit_each(bus: BusFile, n: int) -> None:
    for _ in range(n):
        submit(bus, "a", "b", PAYLOAD)


def sqlite_sync(tmp: str, n: int) -> None:
    """The sync functions of peerbus.sqlite, as this bench always measured them."""
    for durable in (True, False):
        path = Path(tmp) / f"single-{durable}.sqlite"
        bus = connect_bus(path, BusOptions(durable=durable))
        label = f"submit, 1 row per commit, synchronous={'FULL' if durable else 'NORMAL'}"
        timed(label, n, partial(submit_each, bus, n))
        close_bus(bus)

    path = Path(tmp) / "batched.sqlite"
    bus = connect_bus(path, BusOptions())
    rows = [Outgoing("b", PAYLOAD) for _ in range(100)]
    timed(
        "submit_many, 100 rows per commit, FULL",
        n * 10,
        lambda: [submit_many(bus, "a", rows) for _ in range(n // 10)],
    )
    close_bus(bus)

    for batch in (1, 100):
        path = Path(tmp) / f"drain-{batch}.sqlite"
        bus = connect_bus(path, BusOptions(durable=False))
        submit_many(bus, "a", [Outgoing("b", PAYLOAD) for _ in range(n)])
        close_bus(bus)
        timed(f"claim + ack, max_messages={batch}", n, partial(drain, path, batch))


CASES = (
    "Bus.submit, 1 row per commit",
    "Bus.submit_many, 100 rows per commit",
    "Bus.claim + Bus.ack, max_messages=1",
    "Bus.claim + Bus.ack, max_messages=100",
)


async def async_case(case: int, location: str, n: int) -> tuple[int, float]:
    """One case of the async workload on a fresh bus: (messages, seconds)."""
    async with open_bus(location) as bus:
        if case == 0:
            start = time.perf_counter()
            for _ in range(n):
                await bus.submit("a", "b", PAYLOAD)
            return n, time.perf_counter() - start
        if case == 1:
            rows = [Outgoing("b", PAYLOAD) for _ in range(100)]
            start = time.perf_counter()
            for _ in range(n // 10):
                await bus.submit_many("a", rows)
            return n // 10 * 100, time.perf_counter() - start
        for i in range(0, n, 500):
            await bus.submit_many("a", [Outgoing("b", PAYLOAD) for _ in range(min(500, n - i))])
        batch = 1 if case == 2 else 100
        start = time.perf_counter()
        while (claim := await bus.claim("b", max_messages=batch, max_tokens=10**9)).messages:
            await bus.ack(claim)
        return n, time.perf_counter() - start


def run_async(name: str, fresh: Callable[[], str], n: int, backend: str) -> list[str]:
    print(f"[{name}, the async API]")
    cells = []
    for case, label in enumerate(CASES):
        count, seconds = anyio.run(async_case, case, fresh(), n, backend=backend)
        cells.append(report(label, count, seconds))
    return cells


def run(args: argparse.Namespace, pg: PgTarget | str) -> None:
    n = args.messages
    skipped = isinstance(pg, str)
    where = pg if isinstance(pg, str) else pg.describe
    print(
        f"messages={n} backend={args.backend}; postgresql: {'SKIPPED: ' if skipped else ''}{where}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        print("[sqlite, temp files, the sync functions of peerbus.sqlite]")
        sqlite_sync(tmp, n)
        files = iter(range(1_000_000))
        lite = run_async("sqlite", lambda: str(Path(tmp) / f"async-{next(files)}.sqlite"), n,
                         args.backend)  # fmt: skip
    if isinstance(pg, str):
        print(f"[postgresql SKIPPED: {pg}]")
        return
    post = run_async("postgresql", pg.fresh, n, args.backend)
    print("side by side, the async API (each figure with the load average right after it):")
    print(f"  {'':<40} {'sqlite':<32} postgresql")
    for label, a, b in zip(CASES, lite, post, strict=True):
        print(f"  {label:<40} {a:<32} {b}")


def main() -> None:
    parser = bus_parser(__doc__)
    parser.add_argument("--messages", type=int, default=3000)
    parser.add_argument("--backend", choices=["asyncio", "trio"], default="trio")
    args = parser.parse_args()
    if args.messages < 10:
        parser.error("--messages must be >= 10 (the batched submits send it in tens)")
    try:
        with open_pg_target(args.bus, args.reset) as pg:
            run(args, pg)
    except TargetError as exc:
        parser.error(str(exc))


if __name__ == "__main__":
    main()
