"""How the sentinel does on the labelled corpus (tests/sentinel/corpus), with its defaults,
beside the rules it replaced (bench/sentinel_v1) on the same corpus.

Replays every sequence through the real `Sentinel` in the corpus's simulated world, and the
same sequences through the old rules, and prints: recall per labelled rule and per category
(runaways halted by their labelled point), false halts per category (legitimate look-alikes
name the shape they look like), polling loops refused before their third identical call, the
cost of judging a call, and the load average.

    .venv/bin/python bench/sentinel_corpus.py [--repeat 20]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from types import ModuleType
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sentinel_v1.sentinel import Sentinel as OldSentinel

from runtime.instance.guard_settings import SentinelSettings

HERE = Path(__file__).resolve().parent
REPLAY = HERE.parent / "tests" / "sentinel" / "corpus" / "replay.py"


def load_replay() -> ModuleType:
    spec = importlib.util.spec_from_file_location("sentinel_corpus_replay", REPLAY)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def old_rules(replay: ModuleType) -> Callable[[Any], Any]:
    """The same replay through the rules as they were (spelled keys, no outcomes)."""

    def make(settings: SentinelSettings, clock: Callable[[], datetime]) -> Any:
        return OldSentinel(settings, clock=clock)

    def run(case: Any) -> Any:
        return replay.replay(
            case,
            make=make,
            observe=lambda s, request, world: s.observe_call(request, world),
            end=lambda s, world: s.end_turn(world),
        )

    return run


def share(part: int, whole: int) -> str:
    return f"{part:>2}/{whole:<2} {part / whole:6.1%}" if whole else f"{part:>2}/{whole:<2}    -  "


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--repeat", type=int, default=20, help="replays for the timing")
    args = parser.parse_args()
    replay = load_replay()
    cases = replay.load_all()
    new = {c.name: replay.replay(c) for c in cases}
    old = {c.name: old_rules(replay)(c) for c in cases}
    runaways = [c for c in cases if c.runaway]
    legit = [c for c in cases if not c.runaway]
    print(f"corpus: {len(cases)} sequences, {len(runaways)} runaways, {len(legit)} legitimate")

    print("\nrecall per labelled rule (halted by the labelled point)      new            old")
    by_rule: dict[str, list[Any]] = defaultdict(list)
    for c in runaways:
        by_rule[c.rule].append(c)
    for rule in replay.RULES:
        group = by_rule.get(rule, [])
        caught_new = sum(new[c.name].caught for c in group)
        caught_old = sum(old[c.name].caught for c in group)
        print(f"  {rule:<56} {share(caught_new, len(group))}   {share(caught_old, len(group))}")

    print("\nper category                  runaways caught (new / old)   legit halted (new / old)")
    categories = sorted({c.category for c in cases if c.category != "legit"})
    for category in [*categories, "legit"]:
        bad = [c for c in runaways if c.category == category]
        good = [c for c in legit if c.category == category]
        caught = (sum(new[c.name].caught for c in bad), sum(old[c.name].caught for c in bad))
        halted = (
            sum(new[c.name].halted_at is not None for c in good),
            sum(old[c.name].halted_at is not None for c in good),
        )
        line = f"  {category:<26} {caught[0]:>3}/{len(bad):<3} / {caught[1]:>3}/{len(bad):<3}"
        print(f"{line}          {halted[0]:>3}/{len(good):<3} / {halted[1]:>3}/{len(good):<3}")

    for name, outcomes in (("new", new), ("old", old)):
        polling = [c for c in runaways if c.polling]
        before_third = sum(outcomes[c.name].caught for c in polling)
        missed = [c for c in runaways if not outcomes[c.name].caught]
        false_halts = [c for c in legit if outcomes[c.name].halted_at is not None]
        print(f"\n{name} rules: polling loops refused before their 3rd identical call: "
              f"{before_third}/{len(polling)}; runaways missed: {len(missed)}; "
              f"false halts: {len(false_halts)}/{len(legit)}")  # fmt: skip
        for c in missed:
            o = outcomes[c.name]
            print(f"  MISSED {c.name}: labelled {c.rule} by {replay.show(c.halt_by)}, "
                  f"got {o.rule} at {replay.show(o.halted_at)}")  # fmt: skip
        for c in false_halts:
            o = outcomes[c.name]
            print(f"  FALSE HALT {c.name} at {replay.show(o.halted_at)} by {o.rule}: "
                  f"{o.message[:120]}")  # fmt: skip

    calls = sum(o.calls for o in new.values())
    timings = {}
    for name, run in (("new", replay.replay), ("old", old_rules(replay))):
        start = time.perf_counter()
        for _ in range(args.repeat):
            for case in cases:
                run(case)
        timings[name] = (time.perf_counter() - start) / (calls * args.repeat) * 1e6
    print(f"\ncost: {calls} calls judged per replay; {timings['new']:.1f} us per call with the "
          f"world (old rules: {timings['old']:.1f} us, side by side)")  # fmt: skip
    load1, load5, load15 = os.getloadavg()
    print(f"load average: {load1:.2f} {load5:.2f} {load15:.2f} ({os.cpu_count()} cpus)")


if __name__ == "__main__":
    main()
