"""Host overhead per turn, without the model: prompt assembly + store commit + trimming.

Window: 2,000 rows, about 200k tokens (text, tool_use and tool_result blocks), in a real
turns.sqlite. Each measured turn does what the session does around a model call: read the
window and slots, build the prompt, store the input row, commit the reply, plan the trim and
apply it. Target: p99 < 20 ms on the project's 2-core machine.

    .venv/bin/python bench/host_overhead.py [--turns 300] [--rows 2000]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

from runtime.prompt import build_prompt
from runtime.rows import NewRow, estimate_tokens
from runtime.store import TurnStore
from runtime.window import RowStat, WindowCaps, plan_trim


def filler(i: int) -> tuple[dict[str, object], ...]:
    body = f"line {i}: " + "lorem ipsum dolor sit amet " * 6
    if i % 3 == 0:
        return (
            {"type": "text", "text": body},
            {
                "type": "tool_use",
                "id": f"t{i}",
                "name": "Read",
                "input": {"file_path": f"/src/m{i}.py"},
            },
            {"type": "tool_result", "tool_use_id": f"t{i}", "content": body, "is_error": False},
        )
    return ({"type": "text", "text": body * 2},)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--turns", type=int, default=300)
    ap.add_argument("--rows", type=int, default=2000)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        store = TurnStore.open(Path(tmp) / "turns.sqlite")
        seed = []
        for i in range(args.rows):
            blocks = filler(i)
            seed.append(
                NewRow(
                    "user" if i % 2 else "assistant", blocks, estimate_tokens(json.dumps(blocks))
                )
            )
        store.append(seed)
        for n in range(5):
            store.upsert_slot(f"slot{n}", "system", f"value {n}")
        total = sum(r.tokens for r in store.rows())
        caps = WindowCaps(max_rows=args.rows + 20, max_tokens=total + 4_000, low_water=0.95)
        times: list[float] = []
        trims = 0
        for turn in range(args.turns):
            started = time.perf_counter()
            rows = store.rows()
            prompt = build_prompt(
                role_doc="ROLE " * 400, rows=rows, slots=store.slots(), input_text=f"turn {turn}"
            )
            user_id = store.begin_turn(
                NewRow("user", ({"type": "text", "text": f"turn {turn}"},), 3)
            )
            reply = filler(turn)
            store.commit_turn(
                user_id, [NewRow("assistant", reply, estimate_tokens(json.dumps(reply)), True)]
            )
            plan = plan_trim([RowStat.of(r) for r in store.rows()], caps)
            if plan.needed:
                store.delete_rows(plan.evict_ids)
                trims += 1
            times.append((time.perf_counter() - started) * 1000)
            assert prompt.transcript_rows > 0
        times.sort()
        p = lambda q: times[min(len(times) - 1, int(q * len(times)))]  # noqa: E731
        print(f"window: {args.rows} rows, ~{total} tokens; turns: {args.turns}; trims: {trims}")
        print(
            f"per-turn host overhead ms: p50 {p(0.50):.2f}  p90 {p(0.90):.2f}  "
            f"p99 {p(0.99):.2f}  max {times[-1]:.2f}  mean {statistics.mean(times):.2f}"
        )
        store.close()


if __name__ == "__main__":
    main()
