"""Start-up of the `mnemara` console script against `python -c 'import typer'` (target <= 2.0x).

.venv/bin/python bench/cli_startup.py [--runs 21] [--every]

Why a ratio: wall time of a fresh process depends on the machine and its load, so each
`mnemara` call is timed right after a `python -c 'import typer'` call, in turns, under the same
conditions, and medians are compared. The script run is the console script installed next to
this interpreter (`.venv/bin/mnemara`), the same file a user runs, not `python -m`.
`--every` also times `mnemara COMMAND --help` for every command and reports the slowest.
The children run without PYTHONDONTWRITEBYTECODE, so the warm-up round leaves compiled
bytecode behind as any installed run does; otherwise every edited module would be compiled
again in every timed run.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

TARGET = 2.0
BASELINE = "python -c 'import typer'"
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def load() -> str:
    """The load average, printed with every figure so a reader can judge the conditions."""
    return ", ".join(f"{x:.2f}" for x in os.getloadavg())


def wall(argv: list[str]) -> float:
    """Seconds for one process to start, run and exit. A non-zero exit is a broken bench,
    except 2, which a bare `mnemara` (help, then usage exit) returns on purpose."""
    started = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, check=False, env=ENV)
    elapsed = time.perf_counter() - started
    if done.returncode not in (0, 2):
        sys.exit(f"{' '.join(argv)} exited {done.returncode}: {done.stderr.decode()[-500:]}")
    return elapsed


def side_by_side(cases: dict[str, list[str]], runs: int) -> dict[str, list[float]]:
    """Time the baseline and every case in turns, `runs` rounds, after one warm-up round."""
    baseline = [sys.executable, "-c", "import typer"]
    everything = {BASELINE: baseline, **cases}
    for argv in everything.values():
        wall(argv)  # warm the file and bytecode caches
    times: dict[str, list[float]] = {name: [] for name in everything}
    for _ in range(runs):
        for name, argv in everything.items():
            times[name].append(wall(argv))
    return times


def verdict(ratio: float) -> str:
    return "met" if ratio <= TARGET else "MISSED"


def command_names() -> list[list[str]]:
    """Every command and group path the app registers, read from the app itself.
    `claude` is left out: its help is the bundled Claude CLI's, not ours."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    import typer.main

    from panels.cli.main import app

    paths: list[list[str]] = []

    def walk(group: object, words: list[str]) -> None:
        for name, command in getattr(group, "commands", {}).items():
            if [*words, name] != ["claude"]:
                paths.append([*words, name])
                walk(command, [*words, name])

    walk(typer.main.get_command(app), [])
    return paths


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=21, help="rounds (default 21)")
    ap.add_argument("--every", action="store_true", help="also every `COMMAND --help`")
    args = ap.parse_args()
    if args.runs < 1:
        ap.error("--runs must be >= 1")
    exe = Path(sys.executable).parent / "mnemara"
    if not exe.exists():
        sys.exit(f"{exe} not found: install the project into this venv (pip install -e .)")
    cases = {
        "mnemara --help": [str(exe), "--help"],
        "mnemara": [str(exe)],
        "mnemara bus --help": [str(exe), "bus", "--help"],
    }
    print(f"load average before: {load()}")
    times = side_by_side(cases, args.runs)
    base = statistics.median(times[BASELINE])
    for name, samples in times.items():
        median = statistics.median(samples)
        print(
            f"{name:<28} median {median * 1000:6.1f} ms  min {min(samples) * 1000:6.1f} ms  "
            f"max {max(samples) * 1000:6.1f} ms  ({median / base:.2f}x)"
        )
    ratio = statistics.median(times["mnemara --help"]) / base
    bus_ratio = statistics.median(times["mnemara bus --help"]) / base
    print(f"mnemara --help / import typer = {ratio:.2f}x (<= {TARGET}x): {verdict(ratio)}")
    print(
        f"mnemara bus --help / import typer = {bus_ratio:.2f}x (<= {TARGET}x): {verdict(bus_ratio)}"
    )
    if args.every:
        every = {" ".join(p): [str(exe), *p, "--help"] for p in command_names()}
        rounds = max(3, args.runs // 3)
        slow = side_by_side(every, rounds)
        base = statistics.median(slow.pop(BASELINE))
        name, worst = max(((n, statistics.median(s)) for n, s in slow.items()), key=lambda x: x[1])
        print(
            f"slowest of {len(every)} `COMMAND --help` ({rounds} rounds): mnemara {name} --help "
            f"{worst * 1000:.1f} ms = {worst / base:.2f}x import typer (<= {TARGET}x): "
            f"{verdict(worst / base)}"
        )
    print(f"load average after: {load()}  ({args.runs} rounds, {os.cpu_count()} cores)")


if __name__ == "__main__":
    main()
