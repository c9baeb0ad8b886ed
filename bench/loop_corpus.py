"""How the team-loop rules do on the labelled corpus (tests/loops/corpus), with their defaults,
beside the rules they replaced (bench/loops_v1.py) on the same corpus.

Replays every message graph through the real `TeamGraph`, and through the old graph (which
takes a turn's world change as one boolean, true whatever changed), and prints: recall per
labelled rule and per shape (loops caught by their labelled turn: halted, or flagged where
the label expects a flag; by the labelled rule or another), false halts and false flags per
shape of legitimate traffic, what each missed or halted wrongly, the cost of one event (a
turn's end or a send), of an event on a graph holding its full memory, and of writing a
graph's changes to host.sqlite, and the load average.

    .venv/bin/python bench/loop_corpus.py [--repeat 50]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from loops_v1 import OldGraph

from panels.host.loops.graph import Sent, TeamGraph, TurnEnd
from panels.host.loops.rules import RULES, LoopSettings
from panels.host.loops.state import encode
from panels.host.loops.world import NO_CHANGE
from panels.hostdb import connect
from panels.hostdb.loopstate import save_loop_rows
from tests.corpus_kit import load_replay

REPLAY = Path(__file__).resolve().parents[1] / "tests" / "loops" / "corpus" / "replay.py"


def caught(case: Any, outcome: Any) -> tuple[bool, str | None]:
    """Whether a loop was caught in time, and by which rule."""
    if case.expect == "flag":
        flags = [(turn, v) for turn, v in outcome.flags if turn <= case.fire_by]
        return (bool(flags) and outcome.halt is None, flags[0][1].rule if flags else None)
    if outcome.halt is None:
        return (False, None)
    return (outcome.halted_at <= case.fire_by, outcome.halt.rule)


def full_memory_cost(events: int) -> float:
    """Microseconds per event on a graph already holding `memory` messages and turns: a
    two-panel exchange, each turn consuming the last message and sending one (the rules
    find loops in it all along: a verdict is returned, the graph goes on)."""
    settings = LoopSettings()
    graph = TeamGraph(settings)
    panels = ("a", "b")
    warm = settings.memory + 10
    start = 0.0
    for n in range(1, warm + events + 1):
        if n == warm + 1:
            start = time.perf_counter()
        me, other = panels[n % 2], panels[(n + 1) % 2]
        graph.turn_ended(TurnEnd(me, n, (n - 1,) if n > 1 else (), NO_CHANGE, float(n)))
        graph.sent(Sent(n, me, other, f"message {n} about item {n % 17}", turn=n, at=float(n)))
    return (time.perf_counter() - start) / (2 * events) * 1e6


def store_cost(events: int) -> tuple[float, int]:
    """Milliseconds to write the changes of `events` events (one write, as the watch's flush
    does) to a fresh host.sqlite, and the file's size in bytes after the graph's whole memory
    was written and pruned."""
    settings = LoopSettings()
    graph = TeamGraph(settings)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "host.sqlite"
        conn = connect(path)
        try:
            elapsed = 0.0
            for n in range(1, 3 * settings.memory + 1):
                me, other = ("a", "b") if n % 2 else ("b", "a")
                graph.turn_ended(TurnEnd(me, n, (n - 1,), NO_CHANGE, float(n)))
                graph.sent(Sent(n, me, other, f"message {n} on item {n % 17}", turn=n, at=n))
                if n % events == 0:
                    start = time.perf_counter()
                    rows, dropped = encode(graph.take_changes())
                    save_loop_rows(conn, rows, dropped, keep=settings.memory)
                    elapsed += time.perf_counter() - start
            writes = 3 * settings.memory // events
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        finally:
            conn.close()
        return (elapsed / writes * 1e3, path.stat().st_size)


def share(hits: int, total: int) -> str:
    return f"{hits:>2}/{total:<2} {hits / total if total else 0.0:6.1%}"


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--repeat", type=int, default=50, help="replays for the timing")
    args = parser.parse_args()
    replay: ModuleType = load_replay(REPLAY, "loop_corpus_replay")
    cases = replay.load_all()
    runs: dict[str, Callable[[Any], Any]] = {
        "new": lambda c: replay.replay(c),
        "old": lambda c: replay.replay(c, graph=OldGraph()),
    }
    outcomes = {name: {c.name: run(c) for c in cases} for name, run in runs.items()}
    new, old = outcomes["new"], outcomes["old"]
    loops = [c for c in cases if c.loop]
    legit = [c for c in cases if not c.loop]
    print(f"corpus: {len(cases)} message graphs, {len(loops)} loops, {len(legit)} legitimate")

    print("\nloops caught by the labelled turn, per labelled rule      new             old")
    for rule in RULES:
        group = [c for c in loops if c.rule == rule]
        hits = [sum(caught(c, o[c.name])[0] for c in group) for o in (new, old)]
        print(f"  {rule:<54} {share(hits[0], len(group))}   {share(hits[1], len(group))}")
    print("\nloops caught by the labelled turn, per shape             new             old")
    for shape in replay.SHAPES["loop"]:
        group = [c for c in loops if c.shape == shape]
        hits = [sum(caught(c, o[c.name])[0] for c in group) for o in (new, old)]
        print(f"  {shape:<54} {share(hits[0], len(group))}   {share(hits[1], len(group))}")
    print("\nlegitimate traffic halted (flagged), per shape        new              old")
    for shape in replay.SHAPES["legit"]:
        group = [c for c in legit if c.shape == shape]
        cells = []
        for o in (new, old):
            halted = sum(o[c.name].halt is not None for c in group)
            flagged = sum(bool(o[c.name].flags) for c in group)
            cells.append(f"{halted:>2}/{len(group):<2} ({flagged} flagged)")
        print(f"  {shape:<50} {cells[0]:<16} {cells[1]}")

    for name, got in (("new", new), ("old", old)):
        missed = [c for c in loops if not caught(c, got[c.name])[0]]
        false_halts = [c for c in legit if got[c.name].halt is not None]
        false_flags = [c for c in legit if got[c.name].flags]
        print(f"\n{name} rules: loops missed {len(missed)}/{len(loops)}, "
              f"false halts {len(false_halts)}/{len(legit)}, "
              f"false flags {len(false_flags)}/{len(legit)}")  # fmt: skip
        for c in missed:
            o = got[c.name]
            if o.halt is not None:
                how = f"a halt by {o.halt.rule} at turn {o.halted_at}"
            elif o.flags:
                how = f"only a flag ({o.flags[0][1].rule} at turn {o.flags[0][0]})"
            else:
                how = "nothing"
            print(f"  MISSED {c.name}: labelled {c.rule} by turn {c.fire_by}, got {how}")
        for c in false_halts:
            o = got[c.name]
            print(f"  FALSE HALT {c.name} at turn {o.halted_at}: {o.halt.rule}")
        for c in false_flags:
            print(f"  FALSE FLAG {c.name}: {got[c.name].flags[0][1].rule}")
    refused = [c.name for c in cases if new[c.name].refused]
    print(f"\ngraphs with a send the host's send limits refuse: {len(refused)} {refused}")

    events = sum(o.events for o in new.values())
    print(f"\ncost: {events} events per replay of the corpus (replay included):")
    for name, run in runs.items():
        start = time.perf_counter()
        for _ in range(args.repeat):
            for case in cases:
                run(case)
        per_event = (time.perf_counter() - start) / (events * args.repeat) * 1e6
        print(f"  {name} rules: {per_event:.1f} us per event")
    print(f"cost with the graph at its memory bound ({LoopSettings().memory} messages): "
          f"{full_memory_cost(5000):.1f} us per event")  # fmt: skip
    per_write, size = store_cost(50)
    print(f"cost of writing 50 events' changes to host.sqlite: {per_write:.2f} ms per write; "
          f"file at the memory bound: {size / 1e6:.1f} MB")  # fmt: skip
    load1, load5, load15 = os.getloadavg()
    print(f"load average: {load1:.2f} {load5:.2f} {load15:.2f} ({os.cpu_count()} cpus)")


if __name__ == "__main__":
    main()
