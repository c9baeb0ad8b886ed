"""How the sentinel does on the labelled corpus (tests/sentinel/corpus), with its defaults.

Replays every sequence through the real `Sentinel` in the corpus's simulated world and
prints: recall per rule (runaways halted by their labelled point, by the rule they are
labelled with or another), polling loops refused before their third identical call, false
halts on legitimate sessions, the cost of judging a call, and the load average.

    .venv/bin/python bench/sentinel_corpus.py [--repeat 20]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import time
from collections import defaultdict
from pathlib import Path
from types import ModuleType
from typing import Any

REPLAY = Path(__file__).resolve().parent.parent / "tests" / "sentinel" / "corpus" / "replay.py"


def load_replay() -> ModuleType:
    spec = importlib.util.spec_from_file_location("sentinel_corpus_replay", REPLAY)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=20, help="replays for the timing")
    args = parser.parse_args()
    replay = load_replay()
    cases = replay.load_all()
    outcomes = [replay.replay(c) for c in cases]
    runaways = [o for o in outcomes if o.sequence.runaway]
    legit = [o for o in outcomes if not o.sequence.runaway]
    print(f"corpus: {len(cases)} sequences, {len(runaways)} runaways, {len(legit)} legitimate")

    by_rule: dict[str, list[Any]] = defaultdict(list)
    for o in runaways:
        by_rule[o.sequence.rule].append(o)
    print("\nrecall per labelled rule (halted by the labelled point):")
    for rule in replay.RULES:
        group = by_rule.get(rule, [])
        caught = [o for o in group if o.caught]
        same = [o for o in caught if o.rule == rule]
        share = len(caught) / len(group) if group else 0.0
        print(
            f"  {rule:<12} {len(caught):>2}/{len(group):<2} {share:6.1%}"
            f"   (by this rule: {len(same)}, by another: {len(caught) - len(same)})"
        )
    other = [o for o in runaways if not o.sequence.polling]
    other_caught = sum(o.caught for o in other)
    print(
        f"  {'all others':<12} {other_caught:>2}/{len(other):<2} {other_caught / len(other):6.1%}"
    )

    polling = [o for o in runaways if o.sequence.polling]
    before_third = sum(o.caught for o in polling)
    print(f"\npolling loops refused before their 3rd identical call: {before_third}/{len(polling)}")
    early = [
        f"{o.sequence.name} at {replay.show(o.halted_at)}"
        for o in runaways
        if o.caught and o.halted_at < o.sequence.halt_by
    ]
    print(f"runaways halted before their labelled point: {len(early)}")
    for line in early:
        print(f"  {line}")
    missed = [o for o in runaways if not o.caught]
    for o in missed:
        print(
            f"  MISSED {o.sequence.name}: labelled {o.sequence.rule} by "
            f"{replay.show(o.sequence.halt_by)}, got {o.rule} at {replay.show(o.halted_at)}"
        )

    false_halts = [o for o in legit if o.halted_at is not None]
    print(f"\nfalse halts on legitimate sessions: {len(false_halts)}/{len(legit)}")
    for o in false_halts:
        print(f"  {o.sequence.name} at {replay.show(o.halted_at)} by {o.rule}: {o.message}")

    calls = sum(o.calls for o in outcomes)
    start = time.perf_counter()
    for _ in range(args.repeat):
        for case in cases:
            replay.replay(case)
    elapsed = time.perf_counter() - start
    per_call = elapsed / (calls * args.repeat) * 1e6
    print(f"\ncost: {calls} calls judged per replay, {per_call:.1f} us per call (with the world)")
    load1, load5, load15 = os.getloadavg()
    print(f"load average: {load1:.2f} {load5:.2f} {load15:.2f} ({os.cpu_count()} cpus)")


if __name__ == "__main__":
    main()
