"""Time of one permission decision, `decide()`, for ordinary and oversized tool calls.

A decision runs for every tool call, in a worker thread (runtime/policy/approver.py); the caps
in runtime/policy/limits.py keep the worst case short. Before them, a 100 kB command took
35-42 s. Runs against a throwaway home under a temp directory; prints the median and the
worst of several runs, with the load average (the figures depend on it).

.venv/bin/python bench/policy_decide.py [--runs 5]
"""

from __future__ import annotations

import argparse
import functools
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from runtime.instance.config import InstanceConfig, ToolPolicy
from runtime.instance.home import InstancePaths
from runtime.policy.context import PolicyContext
from runtime.policy.limits import MAX_COMMAND_WORDS, MAX_DIRECTORY_CHANGES
from runtime.policy.policy import PolicyState, Verdict, decide


def machine(root: Path) -> tuple[PolicyState, PolicyContext]:
    home = root / "home"
    project = home / "project"
    (project / "src").mkdir(parents=True)
    state_root = home / ".mnemara"
    instance = InstancePaths.for_name("bench", state_root)
    instance.root.mkdir(parents=True)
    (state_root / "_teams" / "crew").mkdir(parents=True)
    config = InstanceConfig(
        allowed_tools=(
            ToolPolicy(
                tool="Bash",
                mode="ask",
                allowed_patterns=(
                    "git status",
                    "git diff( .*)?",
                    "ls( .*)?",
                    "echo .*",
                    "pytest( .*)?",
                ),
            ),
        )
    )
    ctx = PolicyContext.build(cwd=project, home=home, instance=instance, state_root=state_root)
    return PolicyState.from_config(config), ctx


def cases() -> list[tuple[str, str, dict[str, Any]]]:
    many = " ".join(f"src/f{i}" for i in range(MAX_COMMAND_WORDS - 5))
    cds = " && ".join(["cd src"] * MAX_DIRECTORY_CHANGES)
    compound = "pytest -q tests && git diff --stat"
    write = {"file_path": "src/app.py", "content": "x" * 100_000}
    return [
        ("git status", "Bash", {"command": "git status"}),
        (compound, "Bash", {"command": compound}),
        ("cp a b src/ (writes)", "Bash", {"command": "cp a b src/"}),
        ("Write src/app.py, 100 kB content", "Write", write),
        ("100 kB command (capped)", "Bash", {"command": "echo " + "a " * 50_000}),
        ("100 kB command, one word (capped)", "Bash", {"command": "echo " + "a" * 100_000}),
        (f"{MAX_COMMAND_WORDS - 4} words (under the cap)", "Bash", {"command": f"ls {many}"}),
        (
            f"{MAX_DIRECTORY_CHANGES} cds, then ~{MAX_COMMAND_WORDS - 20} words",
            "Bash",
            {"command": f"{cds} && ls {many[: len(many) - 120]}"},
        ),
    ]


def timed(run: Callable[[], Verdict], runs: int) -> tuple[list[float], Verdict]:
    times = []
    verdict = run()
    for _ in range(runs):
        started = time.perf_counter()
        verdict = run()
        times.append(time.perf_counter() - started)
    return sorted(times), verdict


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        state, ctx = machine(Path(tmp))
        load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
        print(f"load average before: {load} (cores: {os.cpu_count()})")
        for name, tool, tool_input in cases():
            size = len(str(tool_input.get("command", tool_input.get("file_path", ""))))
            call = functools.partial(decide, state, tool, tool_input, ctx)
            times, verdict = timed(call, args.runs)
            print(
                f"{name:48} {size:>7} chars  median {statistics.median(times) * 1000:8.2f} ms"
                f"  max {times[-1] * 1000:8.2f} ms  -> {verdict.action}: {verdict.reason[:60]}"
            )
        load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
        print(f"load average after: {load}")


if __name__ == "__main__":
    main()
