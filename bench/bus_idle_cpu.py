"""CPU used by a consumer waiting on an idle bus (the host's loop with no traffic).

The consumer claims (nothing), then calls `wait_for_change` over and over for the whole
window; CPU time is this process's user + system time over that window, as a share of
one core. What remains on an idle bus is the backstop (PRAGMA data_version every
`backstop_interval`); the wait itself sleeps on inotify in the event loop.

Each figure comes with a bare `anyio.sleep` of the same length on the same backend, measured
right after: on this project's virtual machines a process that only sleeps is charged
0.05-0.25% of a core (it varies with the host), which is no work of the waiter's. The target
applies to the waiter's CPU above that floor; both figures are printed.

    .venv/bin/python bench/bus_idle_cpu.py [--seconds 30] [--warmup 35]   # default settings
    .venv/bin/python bench/bus_idle_cpu.py --sweep                # poll intervals too
"""

from __future__ import annotations

import argparse
import os
import resource
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

from peerbus import BusOptions, open_bus

TARGET = 0.3  # percent of one core


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def idle(
    location: str | Path, seconds: float, warmup: float, overrides: dict[str, Any]
) -> tuple[float, int]:
    """An idle consumer's share of a core over `seconds`, after `warmup` quiet seconds, on
    the bus at `location` (bench/bus_latency.py measures PostgreSQL's with it), and the
    times it woke."""
    wakes = 0
    async with open_bus(location, **overrides) as bus:
        await bus.claim("b")
        started = time.monotonic()
        while (left := warmup - (time.monotonic() - started)) > 0:  # the bus goes quiet
            if await bus.wait_for_change(left, recipient="b"):
                await bus.claim("b")
        cpu0, wall0 = cpu_seconds(), time.monotonic()
        while time.monotonic() - wall0 < seconds:
            if await bus.wait_for_change(seconds, recipient="b"):
                wakes += 1
                await bus.claim("b")
        cpu = cpu_seconds() - cpu0
        wall = time.monotonic() - wall0
    return cpu / wall, wakes


async def bare_sleep(seconds: float) -> float:
    """The share of a core charged to this process while it only sleeps."""
    cpu0, wall0 = cpu_seconds(), time.monotonic()
    await anyio.sleep(seconds)
    return (cpu_seconds() - cpu0) / (time.monotonic() - wall0)


def load() -> str:
    return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=30.0, help="the measured window")
    parser.add_argument(
        "--warmup",
        type=float,
        default=35.0,
        help="idle time before the window: a consumer that has waited a while, not one "
        "that claimed a moment ago",
    )
    parser.add_argument("--sweep", action="store_true", help="also poll intervals 5/10/20 ms")
    args = parser.parse_args()
    if args.seconds <= 0 or args.warmup < 0:
        parser.error("--seconds must be > 0 and --warmup >= 0")
    defaults = BusOptions()
    settings: list[dict[str, Any]] = [{}]
    if args.sweep:
        settings += [{"poll_interval": p} for p in (0.005, 0.01, 0.02)]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bus.sqlite"
        for overrides in settings:
            for backend in ("asyncio", "trio"):
                share, wakes = anyio.run(
                    idle, path, args.seconds, args.warmup, overrides, backend=backend
                )
                floor = anyio.run(bare_sleep, args.seconds, backend=backend)
                what = (
                    f"poll_interval={overrides['poll_interval'] * 1000:.0f}ms"
                    if overrides
                    else f"default settings (backstop_interval="
                    f"{defaults.backstop_interval * 1000:.0f}ms)"
                )
                net = (share - floor) * 100
                ok = net < TARGET
                print(
                    f"backend={backend:<7} {what}  idle CPU {share * 100:.2f}% of a core, "
                    f"a bare sleep {floor * 100:.2f}%, the waiter's own {net:.2f}% "
                    f"(< {TARGET}%): {'met' if ok else 'MISSED'}  (spurious wakes: {wakes}; "
                    f"{load()})"
                )


if __name__ == "__main__":
    main()
