"""Bus throughput in one process: submits (single-row and batched), and claim+ack drains.

.venv/bin/python bench/bus_throughput.py --messages 3000
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import anyio

from peerbus import (
    BusOptions,
    Outgoing,
    ack,
    claim_batch,
    close_bus,
    connect_bus,
    open_bus,
    submit,
    submit_many,
)


def timed(label: str, count: int, run: Callable[[], object]) -> None:
    start = time.perf_counter()
    run()
    seconds = time.perf_counter() - start
    print(f"{label:<52} {count / seconds:>9,.0f} msg/s  ({seconds * 1e6 / count:,.0f} µs each)")


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=3000)
    args = parser.parse_args()
    n = args.messages
    payload = {"type": "review", "text": "x" * 200}  # about 250 B, as in the stack findings

    with tempfile.TemporaryDirectory() as tmp:
        for durable in (True, False):
            path = Path(tmp) / f"single-{durable}.sqlite"
            bus = connect_bus(path, BusOptions(durable=durable))
            label = f"submit, 1 row per commit, synchronous={'FULL' if durable else 'NORMAL'}"
            timed(label, n, lambda b=bus: [submit(b, "a", "b", payload) for _ in range(n)])
            close_bus(bus)

        path = Path(tmp) / "batched.sqlite"
        bus = connect_bus(path, BusOptions())
        rows = [Outgoing("b", payload) for _ in range(100)]
        timed(
            "submit_many, 100 rows per commit, FULL",
            n * 10,
            lambda: [submit_many(bus, "a", rows) for _ in range(n // 10)],
        )
        close_bus(bus)

        async def async_submits() -> None:
            async with open_bus(Path(tmp) / "async.sqlite") as abus:
                for _ in range(n):
                    await abus.submit("a", "b", payload)

        timed("Bus.submit (async, to_thread hop), FULL", n, lambda: anyio.run(async_submits))

        for batch in (1, 100):
            path = Path(tmp) / f"drain-{batch}.sqlite"
            bus = connect_bus(path, BusOptions(durable=False))
            submit_many(bus, "a", [Outgoing("b", payload) for _ in range(n)])
            close_bus(bus)
            timed(f"claim + ack, max_messages={batch}", n, lambda p=path, b=batch: drain(p, b))


if __name__ == "__main__":
    main()
