"""Wall time of `mnemara --help` (target < 0.35 s): heavy imports must stay out of start-up.

.venv/bin/python bench/cli_startup.py [--runs 10]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=10)
    args = ap.parse_args()
    exe = shutil.which("mnemara") or str(Path(sys.executable).parent / "mnemara")
    subprocess.run([exe, "--help"], capture_output=True, check=True)  # warm the file cache
    times = []
    for _ in range(args.runs):
        started = time.perf_counter()
        subprocess.run([exe, "--help"], capture_output=True, check=True)
        times.append(time.perf_counter() - started)
    times.sort()
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(
        f"mnemara --help over {args.runs} runs: median {statistics.median(times):.3f} s, "
        f"min {times[0]:.3f} s, max {times[-1]:.3f} s (load average {load})"
    )


if __name__ == "__main__":
    main()
