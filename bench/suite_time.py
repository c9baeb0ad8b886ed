"""The test suite's wall time, its slowest tests and the load average, as `make test` runs it.

Runs pytest as `make test` does (xdist workers, slow tests first) in a child process and
prints, per run: the outcome line, the wall time, the CPU the run used (pytest and every
process it started and reaped), the load average before and after, and the slowest tests
(setup, call and teardown together). `--hog N` keeps N busy-looping processes running
beside the suite, so "green with both cores busy" is one command:

    .venv/bin/python bench/suite_time.py                     # one run, at rest
    .venv/bin/python bench/suite_time.py --hog 2 --runs 3    # three runs, both cores busy
    .venv/bin/python bench/suite_time.py --workers 0 -m "not slow and not e2e"

Exit status: 0 when every run passed, 1 when one failed, 2 on bad usage.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
LOGS = ROOT / "bench" / "out" / "suite_time"  # each run's whole pytest output
DURATIONS_ENV = "MNEMARA_SUITE_DURATIONS"


# --- the pytest plugin (loaded in the child with `-p suite_time`) -------------------------


def pytest_runtest_logreport(report: Any) -> None:
    """Append each phase's duration to the file the parent named; on the controller only
    (under xdist the controller sees every worker's reports)."""
    target = os.environ.get(DURATIONS_ENV)
    if target and not os.environ.get("PYTEST_XDIST_WORKER"):
        with open(target, "a", encoding="utf-8") as out:
            out.write(json.dumps([report.nodeid, report.when, report.duration]) + "\n")


# --- the bench ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Run:
    code: int
    outcome: str
    wall: float
    cpu_user: float
    cpu_system: float
    load_before: tuple[float, float, float]
    load_after: tuple[float, float, float]
    slowest: list[tuple[float, str]]
    log: Path


def load() -> tuple[float, float, float]:
    return os.getloadavg()


def show_load(avg: tuple[float, float, float]) -> str:
    return " ".join(f"{x:.2f}" for x in avg)


def suite_command(workers: int, marks: str | None, extra: list[str]) -> list[str]:
    command = [sys.executable, "-m", "pytest", "-q", "-p", "suite_time", "-p", "no:cacheprovider"]
    if workers > 0:
        command += ["-n", str(workers), "--dist", "load", "--maxschedchunk", "2"]
    if marks:
        command += ["-m", marks]
    return command + extra


def read_durations(path: Path) -> dict[str, float]:
    totals: dict[str, float] = defaultdict(float)
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            nodeid, _when, seconds = json.loads(line)
            totals[nodeid] += float(seconds)
    return totals


def run_once(command: list[str], top: int, log: Path) -> Run:
    with tempfile.TemporaryDirectory(prefix="suite-time-") as scratch:
        durations = Path(scratch) / "durations.jsonl"
        env = dict(os.environ)
        env.pop("PYTHONDONTWRITEBYTECODE", None)  # as `make test` runs it (see the Makefile)
        env[DURATIONS_ENV] = str(durations)
        env["PYTHONPATH"] = os.pathsep.join(
            filter(None, [str(ROOT / "bench"), env.get("PYTHONPATH")])
        )
        before_load, usage_before = load(), resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.monotonic()
        done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True,
                              stdin=subprocess.DEVNULL, check=False)  # fmt: skip
        wall = time.monotonic() - start
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        after_load = load()
        totals = read_durations(durations)
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text(done.stdout + done.stderr, encoding="utf-8")
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    outcome = lines[-1].strip("= ") if lines else f"no output (exit {done.returncode})"
    if done.returncode not in (0, 5):
        failed = [line for line in lines if line.startswith(("FAILED", "ERROR"))]
        outcome += "".join(f"\n    {line}" for line in failed[:20])
        if not failed:
            outcome += "\n" + "\n".join(
                f"    {line}" for line in (lines + done.stderr.splitlines())[-20:]
            )
    slowest = sorted(((s, n) for n, s in totals.items()), reverse=True)[:top]
    return Run(
        code=done.returncode,
        outcome=outcome,
        wall=wall,
        cpu_user=usage.ru_utime - usage_before.ru_utime,
        cpu_system=usage.ru_stime - usage_before.ru_stime,
        load_before=before_load,
        load_after=after_load,
        slowest=slowest,
        log=log,
    )


def start_hogs(count: int) -> list[subprocess.Popen[bytes]]:
    return [
        subprocess.Popen([sys.executable, "-c", "while True: pass"], stdin=subprocess.DEVNULL)
        for _ in range(count)
    ]


def report(n: int, runs: int, run: Run, workers: int, hogs: int) -> None:
    cpu = run.cpu_user + run.cpu_system
    print(f"run {n} of {runs}: {run.outcome}")
    print(f"  output: {run.log.relative_to(ROOT)}")
    print(f"  wall {run.wall:.1f} s ({run.wall / 60:.1f} min); workers {workers or 'none'}; "
          f"cpu hogs {hogs}")  # fmt: skip
    print(f"  cpu {cpu:.0f} s (user {run.cpu_user:.0f}, system {run.cpu_system:.0f}), "
          f"{cpu / run.wall:.2f} cores on average")  # fmt: skip
    print(f"  load average before {show_load(run.load_before)}, "
          f"after {show_load(run.load_after)} (cores: {os.cpu_count()})")  # fmt: skip
    print(f"  slowest {len(run.slowest)} tests (setup + call + teardown):")
    for seconds, nodeid in run.slowest:
        print(f"    {seconds:6.1f} s  {nodeid}")
    sys.stdout.flush()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=(__doc__ or "").splitlines()[0],
        epilog="Arguments after `--` go to pytest as they are.",
    )
    parser.add_argument(
        "--workers", type=int, default=4, help="xdist workers (default 4, as `make test`; 0: none)"
    )
    parser.add_argument("--runs", type=int, default=1, help="how many runs, one after another")
    parser.add_argument("--hog", type=int, default=0, metavar="N",
                        help="keep N busy-looping processes running beside the suite")  # fmt: skip
    parser.add_argument("-m", dest="marks", help="pytest's marker expression, as `pytest -m`")
    parser.add_argument("--top", type=int, default=20, help="how many slowest tests to list")
    parser.add_argument("pytest_args", nargs="*", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.workers < 0 or args.runs < 1 or args.hog < 0 or args.top < 0:
        parser.error("--workers, --hog and --top must be 0 or more, and --runs 1 or more")
    command = suite_command(args.workers, args.marks, args.pytest_args)
    print(f"suite: {' '.join(command[1:])}")
    hogs = start_hogs(args.hog)
    failed = 0
    try:
        for n in range(1, args.runs + 1):
            stamp = time.strftime("%Y%m%d-%H%M%S")
            run = run_once(command, args.top, LOGS / f"{stamp}-run{n}.log")
            report(n, args.runs, run, args.workers, args.hog)
            failed += run.code not in (0, 5)
    except KeyboardInterrupt:
        print("interrupted")
        return 1
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()
    print(f"{args.runs - failed} of {args.runs} runs passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
