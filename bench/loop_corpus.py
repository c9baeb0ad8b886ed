"""How the team-loop rules do on the labelled corpus (tests/loops/corpus), with their defaults.

Replays every message graph through the real `TeamGraph` and prints: recall per rule (loops
caught by their labelled turn: halted, or flagged where the label expects a flag; by the
labelled rule or another), false halts and false flags on legitimate graphs, the cost of
one event (a turn's end or a send), the cost of an event on a graph holding its full memory,
and the load average.

    .venv/bin/python bench/loop_corpus.py [--repeat 50]
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

from panels.host.loop_rules import RULES, LoopSettings
from panels.host.loops import Sent, TeamGraph, TurnEnd

REPLAY = Path(__file__).resolve().parent.parent / "tests" / "loops" / "corpus" / "replay.py"


def load_replay() -> ModuleType:
    spec = importlib.util.spec_from_file_location("loop_corpus_replay", REPLAY)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def caught(case: Any, outcome: Any) -> tuple[bool, str | None]:
    """Whether a loop was caught in time, and by which rule."""
    if case.expect == "flag":
        flags = [(turn, v) for turn, v in outcome.flags if turn <= case.fire_by]
        return (bool(flags), flags[0][1].rule if flags else None)
    if outcome.halt is None:
        return (False, None)
    return (outcome.halted_at <= case.fire_by, outcome.halt.rule)


def full_memory_cost(events: int) -> float:
    """Microseconds per event on a graph already holding `memory` messages and turns: a
    two-panel exchange, each turn consuming the last message and sending one."""
    settings = LoopSettings(ping_pong_exchanges=10**6, rate_messages=10**6)
    graph = TeamGraph(settings)
    panels = ("a", "b")
    warm = settings.memory + 10
    start = 0.0
    for n in range(1, warm + events + 1):
        if n == warm + 1:
            start = time.perf_counter()
        me, other = panels[n % 2], panels[(n + 1) % 2]
        graph.turn_ended(TurnEnd(me, n, (n - 1,) if n > 1 else (), n % 3 == 0))
        graph.sent(Sent(n, me, other, f"message {n} about item {n % 17}", turn=n, at=float(n)))
    return (time.perf_counter() - start) / (2 * events) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=50, help="replays for the timing")
    args = parser.parse_args()
    replay = load_replay()
    cases = replay.load_all()
    outcomes = [(c, replay.replay(c)) for c in cases]
    loops = [(c, o) for c, o in outcomes if c.loop]
    legit = [(c, o) for c, o in outcomes if not c.loop]
    print(f"corpus: {len(cases)} message graphs, {len(loops)} loops, {len(legit)} legitimate")

    by_rule: dict[str, list[tuple[Any, Any]]] = defaultdict(list)
    for case, outcome in loops:
        by_rule[case.rule].append((case, outcome))
    print("\nrecall per labelled rule (caught by the labelled turn):")
    for rule in RULES:
        group = by_rule.get(rule, [])
        found = [caught(c, o) for c, o in group]
        hits = [r for ok, r in found if ok]
        same = sum(1 for r in hits if r == rule)
        share = len(hits) / len(group) if group else 0.0
        print(f"  {rule:<18} {len(hits):>2}/{len(group):<2} {share:6.1%}"
              f"   (by this rule: {same}, by another: {len(hits) - same})")  # fmt: skip
    for case, outcome in loops:
        ok, got = caught(case, outcome)
        if not ok:
            print(f"  MISSED {case.name}: labelled {case.rule} by turn {case.fire_by}, "
                  f"got {got} at turn {outcome.halted_at}")  # fmt: skip

    false_halts = [(c, o) for c, o in legit if o.halt is not None]
    false_flags = [(c, o) for c, o in legit if o.flags]
    print(f"\nfalse halts on legitimate graphs: {len(false_halts)}/{len(legit)}")
    for case, outcome in false_halts:
        print(f"  {case.name} at turn {outcome.halted_at}: {outcome.halt.describe()}")
    print(f"false flags on legitimate graphs: {len(false_flags)}/{len(legit)}")
    for case, outcome in false_flags:
        print(f"  {case.name}: {outcome.flags[0][1].describe()}")

    events = sum(o.events for _, o in outcomes)
    start = time.perf_counter()
    for _ in range(args.repeat):
        for case in cases:
            replay.replay(case)
    elapsed = time.perf_counter() - start
    per_event = elapsed / (events * args.repeat) * 1e6
    print(f"\ncost: {events} events per replay of the corpus, {per_event:.1f} us per event "
          "(replay included)")  # fmt: skip
    print(f"cost with the graph at its memory bound ({LoopSettings().memory} messages): "
          f"{full_memory_cost(5000):.1f} us per event")  # fmt: skip
    load1, load5, load15 = os.getloadavg()
    print(f"load average: {load1:.2f} {load5:.2f} {load15:.2f} ({os.cpu_count()} cpus)")


if __name__ == "__main__":
    main()
