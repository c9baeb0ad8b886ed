"""Mutation testing of the core modules: how many of mutmut's small changes to each module
the tests that reach it notice.

Each core module has a file in bench/mutation/ naming the module, the tests that reach it
and the mutants left alive on purpose (equivalent: no test could tell them apart), each
with the line it changes and why. Every module runs in a work directory of its own under
.mutmut/ (mutmut's `mutants/` copy, its results), so a run stopped by its time box or by
Ctrl-C goes on where it stopped the next time. When the tests have changed since a module's
survivors were found, they are tried again.

    .venv/bin/python bench/mutation.py [--module window] [--time-box 900] [--workers 2]
        [--fresh] [--show]

Prints `module: killed/tried = score` per module (equivalent mutants left out of both
counts; a mutant whose test run timed out counts as killed), the load average, and with
--show the diff of every surviving mutant. Exits 1 when a module scores under --target
(92%) or has mutants left to try.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
import tomllib
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CONFIGS = ROOT / "bench" / "mutation"
WORK = ROOT / ".mutmut"
PACKAGES = ("runtime", "peerbus", "panels", "sqlitekit")
MUTMUT = Path(sys.executable).parent / "mutmut"
KILLED = {"killed", "timeout"}
RETRY = {"survived", "no tests"}


@dataclass(frozen=True)
class Equivalent:
    mutant: str
    line: str
    why: str


@dataclass(frozen=True)
class Target:
    name: str
    module: str
    tests: tuple[str, ...]
    equivalent: tuple[Equivalent, ...]

    @property
    def work(self) -> Path:
        return WORK / self.name


def load_targets() -> list[Target]:
    targets = []
    for path in sorted(CONFIGS.glob("*.toml")):
        try:
            data = tomllib.loads(path.read_text())
            equivalent = tuple(
                Equivalent(e["mutant"], e["line"], e["why"]) for e in data.get("equivalent", [])
            )
            targets.append(Target(path.stem, data["module"], tuple(data["tests"]), equivalent))
        except (OSError, tomllib.TOMLDecodeError, KeyError, TypeError) as e:
            sys.exit(f"mutation: {path} is not a module's mutation file ({e!r})")
    return targets


def prepare(target: Target, fresh: bool) -> None:
    """The module's work directory: links to the sources and tests, and pyproject.toml with
    mutmut's settings for this module; copies of the other sources brought up to date."""
    if fresh and target.work.exists():
        shutil.rmtree(target.work)
    target.work.mkdir(parents=True, exist_ok=True)
    for name in (*PACKAGES, "tests"):
        link = target.work / name
        if not link.is_symlink():
            link.symlink_to(ROOT / name)
    settings = {
        "source_paths": list(PACKAGES),
        "only_mutate": [target.module],
        "pytest_add_cli_args_test_selection": list(target.tests),
        "pytest_add_cli_args": ["-p", "no:xdist", "-p", "no:cacheprovider"],
    }
    lines = [f"{key} = {json.dumps(value)}" for key, value in settings.items()]
    project = (ROOT / "pyproject.toml").read_text()
    (target.work / "pyproject.toml").write_text(
        project + "\n[tool.mutmut]\n" + "\n".join(lines) + "\n"
    )
    # mutmut copies the sources once; a module changed since would be tested stale.
    copies = target.work / "mutants"
    for package in PACKAGES:
        for copy in (copies / package).rglob("*.py") if (copies / package).exists() else ():
            relative = copy.relative_to(copies)
            source = ROOT / relative
            if str(relative) == target.module:
                continue  # mutmut regenerates its mutants when the source is newer
            if not source.exists():
                copy.unlink()
            elif source.read_bytes() != copy.read_bytes():
                shutil.copy2(source, copy)


def tests_digest(target: Target) -> str:
    digest = hashlib.sha256()
    for selection in (*target.tests, "tests/conftest.py"):
        path = ROOT / selection
        files = sorted(path.rglob("*.py")) if path.is_dir() else [path]
        for file in files:
            if file.exists():
                digest.update(str(file.relative_to(ROOT)).encode() + b"\0" + file.read_bytes())
    return digest.hexdigest()


def mutmut(target: Target, args: list[str], *, timeout: float | None = None) -> str:
    """Runs mutmut in the module's work directory; its output (the log keeps all of it)."""
    log = target.work / "run.log"
    with log.open("a") as out:
        try:
            done = subprocess.run(
                [str(MUTMUT), *args],
                cwd=target.work,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                timeout=timeout,
                check=False,
            )
        except subprocess.TimeoutExpired:
            return "timeout"
    if done.returncode != 0:
        tail = log.read_text(errors="replace")[-1500:]
        raise SystemExit(
            f"mutation: mutmut {args[0]} failed for {target.module}; see {log}\n{tail}"
        )
    return "done"


def results(target: Target) -> dict[str, str]:
    out = subprocess.run(
        [str(MUTMUT), "results", "--all", "true"],
        cwd=target.work,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    found = {}
    for line in out.stdout.splitlines():
        name, sep, status = line.strip().rpartition(": ")
        if sep:
            found[name] = status
    return found


def show(target: Target, mutant: str) -> str:
    out = subprocess.run(
        [str(MUTMUT), "show", mutant],
        cwd=target.work,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    return out.stdout


def run(target: Target, time_box: float, workers: int) -> bool:
    """Tries the module's mutants within the time box; whether every one has been tried."""
    started = time.monotonic()
    digest_file = target.work / "tests.sha256"
    digest = tests_digest(target)
    before = results(target)
    # A mutant that no test reached ("no tests") may be reached by a new one.
    survivors = sorted(name for name, status in before.items() if status in RETRY)
    if survivors and digest_file.exists() and digest_file.read_text() != digest:
        # New tests: mutmut's map of which test reaches which function is made again, and
        # the survivors are tried against the tests as they are now.
        (target.work / "mutants" / "mutmut-stats.json").unlink(missing_ok=True)
        print(f"  tests changed: trying the {len(survivors)} survivors again", flush=True)
        if (
            mutmut(target, ["run", "--max-children", str(workers), *survivors], timeout=time_box)
            == "timeout"
        ):
            return False
    digest_file.write_text(digest)
    left = time_box - (time.monotonic() - started)
    if left <= 0:
        return False
    if mutmut(target, ["run", "--max-children", str(workers)], timeout=left) == "timeout":
        return False
    return all(status != "not checked" for status in results(target).values())


def score(target: Target, found: dict[str, str]) -> tuple[int, int, list[str], list[str]]:
    """Killed and tried (equivalents out of both), the survivors, and stale equivalents."""
    equivalent, stale = set(), []
    for e in target.equivalent:
        if e.mutant in found and e.line.strip() in show(target, e.mutant):
            equivalent.add(e.mutant)
        else:
            stale.append(e.mutant)
    tried = {n: s for n, s in found.items() if s != "not checked" and n not in equivalent}
    killed = sum(1 for s in tried.values() if s in KILLED)
    survivors = sorted(n for n, s in tried.items() if s not in KILLED)
    return killed, len(tried), survivors, stale


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--module", action="append", default=[], help="only modules whose name contains this"
    )
    parser.add_argument(
        "--time-box", type=float, default=900.0, help="seconds per module (default 900)"
    )
    parser.add_argument("--workers", type=int, default=2, help="mutants tried at once (default 2)")
    parser.add_argument(
        "--target", type=float, default=92.0, help="the lowest score that passes (default 92)"
    )
    parser.add_argument(
        "--fresh", action="store_true", help="forget earlier results and start over"
    )
    parser.add_argument(
        "--show", action="store_true", help="print the diff of every surviving mutant"
    )
    args = parser.parse_args()
    if not MUTMUT.exists():
        sys.exit("mutation: mutmut is not installed here; run `make mutate` (it installs it)")
    targets = [
        t for t in load_targets() if not args.module or any(m in t.name for m in args.module)
    ]
    if not targets:
        sys.exit(f"mutation: no module in {CONFIGS} matches {args.module}")
    rows, ok = [], True
    for target in targets:
        print(f"{target.module}: trying its mutants (time box {args.time_box:.0f} s)", flush=True)
        prepare(target, args.fresh)
        started = time.monotonic()
        complete = run(target, args.time_box, args.workers)
        found = results(target)
        killed, tried, survivors, stale = score(target, found)
        pct = 100.0 * killed / tried if tried else 0.0
        untried = sum(1 for s in found.values() if s == "not checked")
        note = f", {untried} not tried yet (time box)" if not complete else ""
        row = (
            f"{target.module}: {killed}/{tried} = {pct:.1f}% "
            f"({len(target.equivalent) - len(stale)} equivalent left out{note})"
        )
        print(f"  {row} in {time.monotonic() - started:.0f} s", flush=True)
        for mutant in stale:
            print(f"  equivalent entry no longer matches a mutant (renumbered?): {mutant}")
        if args.show:
            for mutant in survivors:
                print(show(target, mutant))
        rows.append(row)
        ok = ok and complete and pct >= args.target
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"\nmutation scores (load average {load}, target {args.target:.0f}%):")
    for row in rows:
        print(f"  {row}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
