"""Run many `mnemara` command lines, each in a process of its own, and report how each ended.

    python bad_input_driver.py CASES.json  ->  prints a JSON list of {code, stdout, stderr}

CASES.json is a list of {"args": [...], "env": {...}}. The CLI is imported once; each case
runs in a forked child (its own process, environment and file descriptors, stdin as the
driver's: /dev/null), through `run_cli`, the console script's entry point, so one process
start serves a hundred cases. Used by test_bad_input.py.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import tempfile
from pathlib import Path

# What the commands import lazily, imported once here so every forked child starts warm.
WARM = (
    "panels.cli.main",
    "panels.host.solo",
    "panels.hostdb",
    "peerbus",
    "runtime.rehearsal",
    "runtime.store",
)


def run_case(args: list[str], env: dict[str, str], scratch: Path) -> dict[str, object]:
    out, err = scratch / "out", scratch / "err"
    pid = os.fork()
    if pid == 0:  # the child: never returns
        code = 99
        try:
            os.environ.update(env)
            with out.open("wb") as o, err.open("wb") as e:
                os.dup2(o.fileno(), 1)
                os.dup2(e.fileno(), 2)
            from panels.cli.main import run_cli

            try:
                run_cli(args)
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    return {
        "args": args,
        "code": os.waitstatus_to_exitcode(status),
        "stdout": out.read_text(errors="replace"),
        "stderr": err.read_text(errors="replace"),
    }


def main() -> None:
    for module in WARM:
        importlib.import_module(module)
    cases = json.loads(Path(sys.argv[1]).read_text())
    with tempfile.TemporaryDirectory(prefix="mnemara-bad-input-") as scratch:
        results = [run_case(c["args"], c["env"], Path(scratch)) for c in cases]
    sys.stdout.write(json.dumps(results))


if __name__ == "__main__":
    main()
