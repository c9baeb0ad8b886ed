"""What the one guard costs per tool call: `decide()` with the sentinel measuring the world
(the git state, touched files) by `git status` before every call (the probe before #29) and
by the watched probe (runtime/guard/gitwatch.py), against the same guard with it off.

A git repository of `--files` tracked files in 40 directories (a few of them modified, a few
untracked) is made in a scratch directory; each call names one file. Between calls the world
changes as a session changes it: before every 4th call a tracked file is edited or reverted
(`--edit-every`), before every 50th a new file is written (`--new-every`). The guards decide
the same calls in alternation, so their figures are measured side by side. A fourth guard's
probe reads nothing and answers a state of the same shape (every named file, a git digest):
what the sentinel itself costs. The watched probe first measures once outside the timings
(it watches and scans then). `measure()` alone is the probe as the guard asks it, with the
files the calls named (the last 256).

    .venv/bin/python bench/guard_world.py [--files 2000] [--calls 200]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import tempfile
import time
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path

import anyio

FOLDERS = 40


def make_repo(root: Path, files: int) -> int:
    """The repository; how many files are modified (as many more are untracked)."""
    git = ["git", "-C", str(root), "-c", "user.name=b", "-c", "user.email=b@b"]
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    for i in range(files):
        folder = root / f"pkg{i % FOLDERS}"
        folder.mkdir(exist_ok=True)
        (folder / f"mod{i}.py").write_text(f"def f{i}():\n    return {i}\n" * 20)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "start"], check=True)
    changed = range(0, files, max(1, files // 10))
    for i in changed:
        (root / f"pkg{i % FOLDERS}" / f"mod{i}.py").write_text("changed\n")
        (root / f"new{i}.txt").write_text("untracked\n")
    return len(changed)


def figures(name: str, samples: list[float]) -> str:
    ms = sorted(s * 1000 for s in samples)
    p95 = ms[min(len(ms) - 1, int(0.95 * len(ms)))]
    return f"{name:<48} median {statistics.median(ms):6.2f} ms, p95 {p95:6.2f} ms (n={len(ms)})"


def spelt(i: int) -> str:
    """`i` in letters: results that differ in more than numbers (the sentinel masks those)."""
    return "-".join("abcdefghij"[int(d)] * 3 for d in str(i))


def change_world(root: Path, i: int, files: int, edit_every: int, new_every: int) -> None:
    """What happens between call i-1 and call i (the same for every guard)."""
    if edit_every and i % edit_every == 0:
        n = (i // edit_every) % files
        target = root / f"pkg{n % FOLDERS}" / f"mod{n}.py"
        original = f"def f{n}():\n    return {n}\n" * 20
        edited = (i // edit_every) % 2 == 0
        target.write_text(original + "# edited\n" if edited else original)
    if new_every and i % new_every == 0:
        (root / f"pkg{i % FOLDERS}" / f"written{i}.py").write_text(f"x = {i}\n")


async def main(files: int, calls: int, edit_every: int, new_every: int) -> None:
    from runtime.guard.guard import TOUCHED_CAPACITY, Guard, GuardSettings
    from runtime.guard.sentinel import WorldState
    from runtime.guard.world import WorkingTree
    from runtime.turn.driver import Decision, ToolCallRequest, ToolResult

    class Allow:
        async def decide(self, call: ToolCallRequest) -> Decision:
            return Decision(allow=True)

    async def no_slots() -> list[tuple[str, str]]:
        return []

    root = Path(tempfile.mkdtemp(prefix="guard-world-"))
    modified = make_repo(root, files)
    trees = {
        "git status": WorkingTree(root, no_slots, watch=False),
        "watched": WorkingTree(root, no_slots),
        "off": WorkingTree(root, no_slots, watch=False),
    }

    class Unmeasured:
        """A probe that reads nothing and answers a state of the same shape (every touched
        file, a git digest): what the sentinel itself costs."""

        def __init__(self, root: Path) -> None:
            self.root = root

        async def measure(self, touched: Sequence[str]) -> WorldState:
            files = tuple((path, "unmeasured") for path in sorted(set(touched)))
            return WorldState(files_written=files, git_tree="unmeasured")

    guards = {
        name: Guard(Allow(), GuardSettings(sentinel=name != "off"), world=tree)
        for name, tree in trees.items()
    }
    guards["nothing"] = Guard(Allow(), GuardSettings(sentinel=True), world=Unmeasured(root))
    started = time.perf_counter()
    await trees["watched"].measure(())
    first = time.perf_counter() - started
    timed: dict[str, list[float]] = {name: [] for name in guards}
    probe: dict[str, list[float]] = {"git status": [], "watched": []}
    touched: OrderedDict[str, None] = OrderedDict()  # as the guard keeps them
    for guard in guards.values():
        guard.begin_turn(1)
    for i in range(calls):
        change_world(root, i, files, edit_every, new_every)
        path = str(root / f"pkg{i % FOLDERS}" / f"mod{i % files}.py")
        call = ToolCallRequest(f"c{i}", "Read", {"file_path": path})
        for name, guard in guards.items():
            started = time.perf_counter()
            await guard.decide(call)
            timed[name].append(time.perf_counter() - started)
            guard.observe(ToolResult(call.tool_use_id, f"the contents of {spelt(i)}"))
            if i % 4 == 3:  # a new turn now and then: the sentinel's history stays short
                await guard.finish_turn()
                guard.begin_turn(i + 2)
        touched.pop(path, None)
        touched[path] = None
        while len(touched) > TOUCHED_CAPACITY:
            touched.popitem(last=False)
        for name in probe:  # the probe alone, with the files the guard would hash
            started = time.perf_counter()
            await trees[name].measure(tuple(touched))
            probe[name].append(time.perf_counter() - started)
    same = await trees["watched"].measure(()) == await trees["git status"].measure(())
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    for tree in trees.values():
        tree.close()
    for name, guard in guards.items():
        if guard.halted is not None:
            print(f"the guard ({name}) halted: {guard.halted.notice()}")
    print(
        f"repository: {files} tracked files in {FOLDERS} directories, {modified} modified, "
        f"{modified} untracked; between calls a file edited or reverted every {edit_every} "
        f"calls, a new file every {new_every}"
    )
    watching = trees["watched"].watched
    print(f"watched probe: first measure (watch and scan) {first * 1000:.0f} ms; ", end="")
    print(f"same state as git status at the end: {same}; watching: {watching is not None}")
    print(figures("decide(), sentinel on, git status every call", timed["git status"]))
    print(figures("decide(), sentinel on, watched probe", timed["watched"]))
    print(figures("decide(), sentinel on, a probe reading nothing", timed["nothing"]))
    print(figures("decide(), sentinel off", timed["off"]))
    print(figures("measure() alone, git status every call", probe["git status"]))
    print(figures("measure() alone, watched probe", probe["watched"]))
    print(f"load average: {load} (cores: {os.cpu_count()})")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--edit-every", type=int, default=4)
    parser.add_argument("--new-every", type=int, default=50)
    args = parser.parse_args()
    anyio.run(main, args.files, args.calls, args.edit_every, args.new_every, backend="trio")
