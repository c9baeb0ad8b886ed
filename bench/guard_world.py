"""What the one guard costs per tool call: `decide()` with the sentinel measuring the world
(git status v2 and content hashes, touched files) against the same guard with it off.

A git repository of `--files` tracked files (a few of them modified, a few untracked) is made
in a scratch directory; each call names one file. Both guards decide the same calls in
alternation, so the two figures are measured side by side.

    .venv/bin/python bench/guard_world.py [--files 2000] [--calls 200]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import anyio


def make_repo(root: Path, files: int) -> None:
    git = ["git", "-C", str(root), "-c", "user.name=b", "-c", "user.email=b@b"]
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    for i in range(files):
        folder = root / f"pkg{i % 40}"
        folder.mkdir(exist_ok=True)
        (folder / f"mod{i}.py").write_text(f"def f{i}():\n    return {i}\n" * 20)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "start"], check=True)
    for i in range(0, files, max(1, files // 10)):
        (root / f"pkg{i % 40}" / f"mod{i}.py").write_text("changed\n")
        (root / f"new{i}.txt").write_text("untracked\n")


def figures(name: str, samples: list[float]) -> str:
    ms = sorted(s * 1000 for s in samples)
    p95 = ms[min(len(ms) - 1, int(0.95 * len(ms)))]
    return f"{name}: median {statistics.median(ms):.2f} ms, p95 {p95:.2f} ms (n={len(ms)})"


async def main(files: int, calls: int) -> None:
    from runtime.driver import Decision, ToolCallRequest, ToolResult
    from runtime.guard.guard import Guard, GuardSettings
    from runtime.guard.world import WorkingTree

    class Allow:
        async def decide(self, call: ToolCallRequest) -> Decision:
            return Decision(allow=True)

    async def no_slots() -> list[tuple[str, str]]:
        return []

    root = Path(tempfile.mkdtemp(prefix="guard-world-"))
    make_repo(root, files)
    on = Guard(Allow(), GuardSettings(sentinel=True), world=WorkingTree(root, no_slots))
    off = Guard(Allow(), GuardSettings(sentinel=False), world=WorkingTree(root, no_slots))
    timed: dict[str, list[float]] = {"on": [], "off": []}
    for guard in (on, off):
        guard.begin_turn(1)
    for i in range(calls):
        path = str(root / f"pkg{i % 40}" / f"mod{i % files}.py")
        call = ToolCallRequest(f"c{i}", "Read", {"file_path": path})
        for name, guard in (("on", on), ("off", off)):
            started = time.perf_counter()
            await guard.decide(call)
            timed[name].append(time.perf_counter() - started)
            guard.observe(ToolResult(call.tool_use_id, f"contents of {path}"))
            if i % 4 == 3:  # a new turn now and then: the sentinel's history stays short
                await guard.finish_turn()
                guard.begin_turn(i + 2)
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    for name, guard in (("on", on), ("off", off)):
        if guard.halted is not None:
            print(f"the guard with the sentinel {name} halted: {guard.halted.notice()}")
    print(f"repository: {files} tracked files, {files // 10 or 1} modified and untracked")
    print(figures("decide(), sentinel on (world measured)", timed["on"]))
    print(figures("decide(), sentinel off", timed["off"]))
    print(f"load average: {load} (cores: {os.cpu_count()})")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--calls", type=int, default=200)
    args = parser.parse_args()
    anyio.run(main, args.files, args.calls, backend="trio")
