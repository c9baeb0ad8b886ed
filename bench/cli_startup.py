"""Start-up of the `mnemara` console script against `python -c 'import typer'` (target <= 2.0x).

.venv/bin/python bench/cli_startup.py [--runs 21] [--every] [--memory]

Why a ratio: wall time of a fresh process depends on the machine and its load, so each
`mnemara` call is timed right after a `python -c 'import typer'` call, in turns, under the same
conditions, and medians are compared. The script run is the console script installed next to
this interpreter (`.venv/bin/mnemara`), the same file a user runs, not `python -m`.
`--every` also times `mnemara COMMAND --help` for every command and reports the slowest.
`--memory` also times, in a throwaway MNEMARA_HOME with 200 indexed notes, `mnemara note`
(target: within 1.5x of `mnemara --help`, since it loads no engine) and a cold `mnemara memory
search` (target: within 3x of `mnemara --help` plus the embedder's load, which is timed on its
own as a process that loads the model and embeds one word, less a bare `python -c pass`).
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
import tempfile
import time
from pathlib import Path

TARGET = 2.0
NOTE_TARGET = 1.5  # `mnemara note` / `mnemara --help`
SEARCH_TARGET = 3.0  # cold `mnemara memory search` / (`mnemara --help` + the embedder's load)
BASELINE = "python -c 'import typer'"
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def load() -> str:
    """The load average, printed with every figure so a reader can judge the conditions."""
    return ", ".join(f"{x:.2f}" for x in os.getloadavg())


def wall(argv: list[str], env: dict[str, str] | None = None) -> float:
    """Seconds for one process to start, run and exit. A non-zero exit is a broken bench,
    except 2, which a bare `mnemara` (help, then usage exit) returns on purpose."""
    started = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, check=False, env=env or ENV)
    elapsed = time.perf_counter() - started
    if done.returncode not in (0, 2):
        sys.exit(f"{' '.join(argv)} exited {done.returncode}: {done.stderr.decode()[-500:]}")
    return elapsed


def side_by_side(
    cases: dict[str, list[str]], runs: int, env: dict[str, str] | None = None
) -> dict[str, list[float]]:
    """Time the baseline and every case in turns, `runs` rounds, after one warm-up round."""
    baseline = [sys.executable, "-c", "import typer"]
    everything = {BASELINE: baseline, **cases}
    for argv in everything.values():
        wall(argv, env)  # warm the file and bytecode caches
    times: dict[str, list[float]] = {name: [] for name in everything}
    for _ in range(runs):
        for name, argv in everything.items():
            times[name].append(wall(argv, env))
    return times


def memory_figures(exe: Path, runs: int) -> bool:
    """`mnemara note` and a cold `mnemara memory search` beside `--help`; True when both meet
    their targets. The notes are made and indexed first, in a throwaway MNEMARA_HOME."""
    with tempfile.TemporaryDirectory(prefix="cli-startup-") as home:
        env = {**ENV, "MNEMARA_HOME": home}
        for name in ("noting", "quiet"):
            subprocess.run([str(exe), "init", "-i", name], env=env, check=True, capture_output=True)
        seed = (
            "from runtime.instance.home import InstancePaths\n"
            "from runtime.memory.notes import FileNotes\n"
            "notes = FileNotes(InstancePaths.for_name('quiet').memory)\n"
            "for i in range(200):\n"
            "    notes.append(f'cluster {i} costs ${100 + i} a month in region r{i % 7}')\n"
        )
        subprocess.run([sys.executable, "-c", seed], env=env, check=True)
        subprocess.run(
            [str(exe), "memory", "index", "-i", "quiet"], env=env, check=True, capture_output=True
        )
        embedder = "from runtime.memory.embed import MiniLMEmbedder; MiniLMEmbedder().embed(['x'])"
        cases = {
            "mnemara --help": [str(exe), "--help"],
            "mnemara note": [str(exe), "note", "-i", "noting", "a note for the bench"],
            "mnemara memory search": [str(exe), "memory", "search", "-i", "quiet", "cost r3"],
            "python -c pass": [sys.executable, "-c", "pass"],
            "embedder load": [sys.executable, "-c", embedder],
        }
        times = side_by_side(cases, runs, env)
    median = {name: statistics.median(samples) for name, samples in times.items()}
    for name, value in median.items():
        print(f"{name:<28} median {value * 1000:7.1f} ms  ({value / median[BASELINE]:.2f}x typer)")
    helps = median["mnemara --help"]
    load_model = max(0.0, median["embedder load"] - median["python -c pass"])
    note = median["mnemara note"] / helps
    search = median["mnemara memory search"] / (helps + load_model)
    print(f"the embedder's load: {load_model * 1000:.1f} ms")
    print(
        f"mnemara note / mnemara --help = {note:.2f}x (<= {NOTE_TARGET}x): "
        f"{'met' if note <= NOTE_TARGET else 'MISSED'}"
    )
    print(
        f"cold memory search / (mnemara --help + the embedder's load) = {search:.2f}x "
        f"(<= {SEARCH_TARGET}x): {'met' if search <= SEARCH_TARGET else 'MISSED'}"
    )
    return note <= NOTE_TARGET and search <= SEARCH_TARGET


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
    ap.add_argument(
        "--memory", action="store_true", help="also `mnemara note` and a cold `memory search`"
    )
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
    if args.memory:
        memory_figures(exe, max(5, args.runs // 2))
    print(f"load average after: {load()}  ({args.runs} rounds, {os.cpu_count()} cores)")


if __name__ == "__main__":
    main()
