"""What the depth-capped JSON loader costs next to `json.loads`, side by side in one run.

    .venv/bin/python bench/jsonload.py [--rounds 20000]

Two documents, each decoded `--rounds` times by `json.loads` and by `sqlitekit.jsonload.
load_json` (the 492 KB one a fiftieth as often): a 2 KB turn-store row, which has too few
brackets to nest past the cap and skips the scan, and a 492 KB document with thousands of
brackets, which is scanned. Each line prints the ratio and the load average.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sqlitekit.jsonload import load_json

ROW = json.dumps(
    [
        {"type": "text", "text": "hello world " * 150},
        {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls -la"}},
    ]
)
BIG = json.dumps(
    [{"type": "text", "text": "hello world " * 200, "n": [1, 2, 3, {"a": 'b"c'}]}] * 200
)


def per_call(decode: Callable[[str], Any], doc: str, rounds: int) -> float:
    start = time.perf_counter()
    for _ in range(rounds):
        decode(doc)
    return (time.perf_counter() - start) / rounds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=20_000, help="decodes of the small row")
    args = parser.parse_args()
    if args.rounds < 50:
        parser.error("--rounds must be at least 50")
    for name, doc, rounds in (("row", ROW, args.rounds), ("document", BIG, args.rounds // 50)):
        plain = per_call(json.loads, doc, rounds)
        capped = per_call(load_json, doc, rounds)
        one, five, _ = os.getloadavg()
        print(
            f"{name} ({len(doc):,} chars): json.loads {plain * 1e6:.1f} us, load_json "
            f"{capped * 1e6:.1f} us, ratio {capped / plain:.2f} (load {one:.2f} / {five:.2f})"
        )


if __name__ == "__main__":
    main()
