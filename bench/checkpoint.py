"""What a turn's checkpoint costs (issue 28: target < 50 ms on a repository of 2,000 files).

    .venv/bin/python bench/checkpoint.py [--files 2000] [--turns 10]

A generated git repository of `--files` files (source-like sizes, 40 folders, a .gitignore
and ignored build output, committed by its user) is checkpointed as a host does before a
turn (runtime/checkpoint/, `take_and_prune`): the first checkpoint (every file read once),
then `--turns` later ones each after a turn that changed three files and made one (kept: 3,
so most of them also prune the oldest, as every turn does once a panel has 50), then one
after a turn that changed nothing; the same with the copy store (no git) for comparison.
Then the cost of a rewind of one such turn. Medians; every figure line ends with the load
average when it was measured. `bench/sandbox.py` prints these lines too.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

LATER_TARGET_MS = 50.0


def load() -> str:
    one, five, _ = os.getloadavg()
    return f"(load {one:.2f} / {five:.2f})"


def make_repository(root: Path, files: int, rng: random.Random) -> list[Path]:
    """`files` files in 40 folders of 7 subfolders, committed; ignored output beside them."""
    made = []
    for n in range(files):
        folder = root / f"pkg{n % 40}" / f"sub{n % 7}"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"mod{n}.py"
        path.write_text(f"VALUE_{n} = {n}\n" * rng.randint(5, 400))
        made.append(path)
    (root / ".gitignore").write_text("build/\n*.pyc\n")
    (root / "build").mkdir()
    for n in range(200):
        (root / "build" / f"out{n}.o").write_bytes(os.urandom(2048))
    if shutil.which("git"):
        env = {**os.environ, "GIT_AUTHOR_NAME": "u", "GIT_AUTHOR_EMAIL": "u@x",
               "GIT_COMMITTER_NAME": "u", "GIT_COMMITTER_EMAIL": "u@x"}  # fmt: skip
        for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "start"]):
            subprocess.run(["git", *args], cwd=root, env=env, check=True, capture_output=True)
    return made


def a_turn(root: Path, made: list[Path], rng: random.Random, turn: int) -> None:
    """Three files changed and one made, as a small coding turn does."""
    for path in rng.sample(made, 3):
        with path.open("a") as out:
            out.write(f"# turn {turn}\n")
    (root / "pkg0" / f"new{turn}.py").write_text(f"NEW = {turn}\n")


def measure(kind: str, files: int, turns: int) -> dict[str, float]:
    from runtime.checkpoint import CheckpointSettings, open_store, rewind, take_and_prune

    rng = random.Random(28)
    settings = CheckpointSettings(keep=3)  # from the fourth on, each also prunes one
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        work = base / "repo"
        made = make_repository(work, files, rng)
        store = open_store(base / "instance", prefer=kind)  # type: ignore[arg-type]

        def timed() -> float:
            start = time.perf_counter()
            take_and_prune(store, [work], settings=settings, turn=0)
            return (time.perf_counter() - start) * 1000

        first = timed()
        later = []
        for turn in range(1, turns + 1):
            a_turn(work, made, rng, turn)
            later.append(timed())
        unchanged = statistics.median(timed() for _ in range(3))
        a_turn(work, made, rng, turns + 1)
        start = time.perf_counter()
        report = rewind(store, None, settings=settings)
        undo = (time.perf_counter() - start) * 1000
        assert report.ok and report.count("removed") == 1, report.details()
    return {"first": first, "later": statistics.median(later), "worst": max(later),
            "unchanged": unchanged, "rewind": undo}  # fmt: skip


def per_checkpoint(files: int, turns: int = 10) -> None:
    kinds = ["git", "copy"] if shutil.which("git") else ["copy"]
    for kind in kinds:
        got = measure(kind, files, turns)
        verdict = ""
        if kind == "git":
            ok = got["later"] < LATER_TARGET_MS
            verdict = f" (target < {LATER_TARGET_MS:.0f} ms: {'met' if ok else 'MISSED'})"
        print(
            f"per turn, checkpoint ({kind} store, {files} files): first {got['first']:.0f} ms, "
            f"later {got['later']:.1f} ms median (worst {got['worst']:.1f}) with 4 files "
            f"changed{verdict}, {got['unchanged']:.1f} ms with none; a rewind of one turn "
            f"{got['rewind']:.0f} ms {load()}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--files", type=int, default=2000, help="files in the repository")
    parser.add_argument("--turns", type=int, default=10, help="later checkpoints measured")
    args = parser.parse_args()
    if args.files < 1 or args.turns < 1:
        parser.error("--files and --turns must be at least 1")
    per_checkpoint(args.files, args.turns)


if __name__ == "__main__":
    main()
