"""Memory's costs: what a session that never touches memory pays at import (target 0 ms), the
offline embedder's load, indexing 1,000 atoms with it, and search latency (target p50 < 20 ms).
Targets from issue 11.

    .venv/bin/python bench/memory.py [--atoms 1000] [--queries 200] [--seed 1]

- import cost: `python -X importtime -c "import runtime.turn.session"` (and `runtime.memory`) in a
  fresh process; the self-times of every module of lancedb, pyarrow, onnxruntime, tokenizers,
  numpy, ladybug and kuzu are summed (0 when none is imported), and `sys.modules` is checked
  after the import too. The cumulative time of `runtime.memory` itself is printed apart.
- embedder load: the first `embed` of MiniLMEmbedder (imports, the sha256 checks of both
  files, the ONNX session), in this process, before anything else imported onnxruntime.
- indexing: `--atoms` generated notes (deterministic for a seed, 8-30 words) upserted into a
  fresh LanceDB index in a temporary directory with the real model: seconds and atoms/s.
- search: `--queries` generated queries against that index, each timed around
  `LanceIndex.search` (embedding the query included): p50, p99, max.

Every figure line ends with the load average when it was measured.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

HEAVY = ("lancedb", "pyarrow", "onnxruntime", "tokenizers", "numpy", "ladybug", "kuzu", "lance")
SEARCH_P50_TARGET_MS = 20.0
SUBJECTS = ["the deploy", "the nightly build", "the database migration", "the user",
            "the API", "the cache", "the login page", "the billing job", "the search index",
            "the CI runner", "the canary", "the backup", "the release notes", "the on-call rota",
            "the dashboard"]  # fmt: skip
VERBS = ["failed because of", "was fixed by", "depends on", "got slower after", "needs",
         "was rolled back after", "prefers", "broke during", "is blocked on",
         "improved with"]  # fmt: skip
OBJECTS = ["a full disk", "an expired certificate", "the new connection pool", "short answers",
           "a missing index", "the retry limit", "a flaky network", "the upgrade to 3.12",
           "a typo in the config", "the rate limiter", "a memory leak", "the staging database",
           "the feature flag", "a timezone bug", "the vendor outage"]  # fmt: skip
DETAILS = ["on Tuesday", "twice this week", "according to the logs", "in region eu-west",
           "after the holiday freeze", "says the operator", "per ticket 4411", "again",
           "for the third time", "during the load test"]  # fmt: skip


def load_text() -> str:
    return "load " + " ".join(f"{x:.2f}" for x in os.getloadavg()) + f" ({os.cpu_count()} cores)"


def note(rng: random.Random) -> str:
    parts = [rng.choice(SUBJECTS), rng.choice(VERBS), rng.choice(OBJECTS)]
    parts += rng.sample(DETAILS, rng.randint(0, 3))
    return " ".join(parts)


def import_cost(module: str) -> tuple[float, float, list[str]]:
    """(ms of heavy modules' self time, ms cumulative of runtime.memory, heavy modules loaded)."""
    code = f"import sys, {module}; print(' '.join(sorted(sys.modules)))"
    done = subprocess.run([sys.executable, "-X", "importtime", "-c", code], cwd=ROOT,
                          capture_output=True, text=True, check=True)  # fmt: skip
    heavy_us = memory_us = 0
    for line in done.stderr.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        self_us, cumulative_us, name = (part.strip() for part in line[12:].split("|"))
        if name.split(".")[0] in HEAVY:
            heavy_us += int(self_us)
        if name == "runtime.memory":
            memory_us = int(cumulative_us)
    loaded = [name for name in done.stdout.split() if name.split(".")[0] in HEAVY]
    return heavy_us / 1000, memory_us / 1000, loaded


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--atoms", type=int, default=1_000)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()

    for module in ("runtime.turn.session", "runtime.memory"):
        heavy_ms, memory_ms, loaded = import_cost(module)
        verdict = "PASS" if heavy_ms == 0 and not loaded else "MISS"
        names = f" ({', '.join(loaded[:5])})" if loaded else ""
        print(f"import cost of {module}: heavy engines {heavy_ms:.1f} ms self time, "
              f"{len(loaded)} heavy modules in sys.modules{names}; runtime.memory "
              f"{memory_ms:.1f} ms cumulative; target 0 ms {verdict}; {load_text()}")  # fmt: skip

    from runtime.memory.embed import MiniLMEmbedder
    from runtime.memory.lance import open_lance_index
    from runtime.memory.model import Atom

    embedder = MiniLMEmbedder()
    started = time.perf_counter()
    embedder.embed(["warm up"])
    print(f"embedder load ({embedder.name}, first embed): "
          f"{time.perf_counter() - started:.2f} s; {load_text()}")  # fmt: skip

    rng = random.Random(args.seed)
    atoms = [Atom(f"memory/bench.md#{i:06d}", "note", note(rng), "note") for i in range(args.atoms)]
    queries = [note(rng) for _ in range(args.queries)]
    with tempfile.TemporaryDirectory(prefix="mnemara-bench-memory-") as tmp:
        index = open_lance_index(Path(tmp) / "index", embedder)
        started = time.perf_counter()
        written = index.upsert(atoms)
        seconds = time.perf_counter() - started
        assert written == index.count() == args.atoms, (written, index.count())
        print(f"indexing {args.atoms:,} atoms (MiniLM, LanceDB): {seconds:.2f} s, "
              f"{args.atoms / seconds:.0f} atoms/s; {load_text()}")  # fmt: skip

        index.search(queries[0])  # the first query opens the table's files
        times = []
        for query in queries:
            started = time.perf_counter()
            hits = index.search(query, k=5)
            times.append((time.perf_counter() - started) * 1000)
            assert hits, query
        p50 = statistics.median(times)
        verdict = "PASS" if p50 < SEARCH_P50_TARGET_MS else "MISS"
        print(f"search ({len(times)} queries, k=5, on {args.atoms:,} atoms, query embedding "
              f"included): p50 {p50:.1f} ms, p99 {percentile(times, 0.99):.1f} ms, "
              f"max {max(times):.1f} ms; target p50 < {SEARCH_P50_TARGET_MS:.0f} ms {verdict}; "
              f"{load_text()}")  # fmt: skip
        index.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
