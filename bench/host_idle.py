"""Host cost at rest: CPU and memory of a host running N idle panels (no turns).

Idle panels hold no CLI process (the CLI runs per turn), so this measures the host itself:
its bus watcher, control loop, event writer and each panel's wait. Scripted drivers, real
SQLite files in a temp dir. Target: < 5% of one core with 16 panels.

    .venv/bin/python bench/host_idle.py [--panels 16] [--seconds 20]
"""

from __future__ import annotations

import argparse
import os
import resource
import tempfile
import time
from pathlib import Path

import anyio


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


async def main(panels: int, seconds: float) -> None:
    scratch = Path(tempfile.mkdtemp(prefix="host-idle-"))
    os.environ["MNEMARA_HOME"] = str(scratch / "home")
    from panels.host import Host
    from panels.team import parse_team
    from runtime.turn.scripted import ScriptedDriver

    (scratch / "work").mkdir()
    body = "".join(f'[[panels]]\nname = "p{i:02d}"\n' for i in range(panels))
    team = parse_team(f'[team]\nname = "idle"\nworkdir = "work"\n{body}',
                      source=scratch / "team.toml", home=scratch / "home")  # fmt: skip
    before_start = rss_mb()
    host = Host(team, drivers=lambda spec: ScriptedDriver([]), home=scratch / "home")
    async with anyio.create_task_group() as tg:
        await tg.start(host.serve)
        await anyio.sleep(2)  # let start-up settle
        rss_idle = rss_mb()
        cpu0, wall0 = time.process_time(), time.monotonic()
        await anyio.sleep(seconds)
        cpu, wall = time.process_time() - cpu0, time.monotonic() - wall0
        host.request_stop()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    one, five, fifteen = os.getloadavg()
    print(f"panels={panels} measured={wall:.1f}s (load average {one:.2f} {five:.2f} {fifteen:.2f})")
    print(f"host cpu: {100 * cpu / wall:.2f}% of one core ({cpu * 1000:.0f} ms cpu)")
    print(
        f"host rss: {rss_idle:.1f} MB idle (before start {before_start:.1f} MB, peak {peak:.1f} MB)"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--panels", type=int, default=16, help="idle panels in the team")
    parser.add_argument("--seconds", type=float, default=20.0, help="how long to measure")
    args = parser.parse_args()
    if args.panels < 1 or args.seconds <= 0:
        parser.error("--panels must be >= 1 and --seconds > 0")
    anyio.run(main, args.panels, args.seconds, backend="trio")
