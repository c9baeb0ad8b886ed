"""CPU used by a consumer waiting on an idle bus (the host's loop with no traffic).

The consumer claims (nothing), then calls `wait_for_change` over and over for the whole
window; CPU time is this process's user + system time over that window, as a share of
one core.

    .venv/bin/python bench/bus_idle_cpu.py --seconds 10
"""

from __future__ import annotations

import argparse
import resource
import tempfile
import time
from pathlib import Path

import anyio

from peerbus import open_bus


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def idle(path: Path, seconds: float, poll_interval: float) -> tuple[float, int]:
    wakes = 0
    async with open_bus(path, poll_interval=poll_interval) as bus:
        await bus.claim("b")
        cpu0, wall0 = cpu_seconds(), time.monotonic()
        while time.monotonic() - wall0 < seconds:
            if await bus.wait_for_change(seconds, recipient="b"):
                wakes += 1
                await bus.claim("b")
        cpu = cpu_seconds() - cpu0
        wall = time.monotonic() - wall0
    return cpu / wall, wakes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bus.sqlite"
        for backend in ("asyncio", "trio"):
            for poll in (0.005, 0.01, 0.02):
                share, wakes = anyio.run(idle, path, args.seconds, poll, backend=backend)
                print(
                    f"backend={backend:<7} poll_interval={poll * 1000:>4.0f}ms  "
                    f"idle CPU {share * 100:.2f}% of a core  (spurious wakes: {wakes})"
                )


if __name__ == "__main__":
    main()
