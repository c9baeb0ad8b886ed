"""Memory's recall: does replay keep every fact, and does search find a note by its id, number,
version or name as well as by its meaning? Targets from issue 31.

    .venv/bin/python bench/memory_recall.py [--notes 240] [--seed 1] [--queries 30] [--json]

1. A corpus (bench/memory_recall_corpus.py, the same for a seed) of an operations team's
   notes: pairs that read alike but differ in one fact, pairs that truly repeat, background,
   appended with FileNotes into an instance under a temporary MNEMARA_HOME (`--keep DIR`
   keeps it), dated in the 6 days before a fixed `now`: inside replay's default 7 days.
2. Replay's own plan and apply (runtime/memory/replay.py, replay_write.py) as `mnemara replay
   --apply` runs them, with the default embedder and no graph (nothing is linked). Printed:
   `facts lost by replay` (target 0: a fact is lost when every note carrying it was archived;
   from the ground truth, cross-checked with runtime/memory/facts.py: the statements and
   tokens of all notes that no note left states), `true duplicates archived`, the differing
   pairs proposed to reconcile, and a second plan and apply (target: 0 archived, 0 written).
3. The notes left are indexed (`sync_index`) and queried through `Memory.search`, vector-only
   and hybrid, by meaning (a paraphrase without the note's key tokens), id, number, version
   and name. A query's answers are the notes of its topic carrying its fact; recall@k is the
   share of queries with an answer in the first k hits. Targets: hybrid recall@5 at least
   0.95 on id and on number queries, and at least vector-only's on meaning queries.

Figure lines end with the load average; embedding progress goes to stderr. Exit status: 0
when every target is met, 1 when one is missed (or the build has no hybrid search), 2 on bad
usage.
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [p for p in (str(ROOT), str(ROOT / "bench")) if p not in sys.path]

from memory_recall_corpus import (  # noqa: E402
    NOW,
    QUERY_KINDS,
    Corpus,
    CorpusError,
    Ranked,
    make_corpus,
    recall,
)

if TYPE_CHECKING:
    from runtime.instance.config import InstanceConfig
    from runtime.instance.home import InstancePaths
    from runtime.memory.facts import Facts
    from runtime.memory.memory import Memory
    from runtime.memory.protocols import Embedder, Progress
    from runtime.memory.replay import ReplayPlan
    from runtime.memory.replay_write import ReplayResult

K = 5
ID_NUMBER_TARGET = 0.95
Scores = dict[str, dict[str, tuple[float, float]]]  # mode -> query kind -> (recall@1, @K)
Run: TypeAlias = "tuple[ReplayPlan, ReplayResult]"  # a replay's plan, and what applying it did


def load_text() -> str:
    return "load " + " ".join(f"{x:.2f}" for x in os.getloadavg()) + f" ({os.cpu_count()} cores)"


def progress(label: str) -> Progress:
    """A bar on a terminal (runtime/memory/progress.py); elsewhere a line per batch."""
    from runtime.memory.progress import progress_bar

    bar = progress_bar(0, label)
    if bar.shown:
        return bar

    def line(done: int, total: int) -> None:
        print(f"{label}: {done}/{total}", file=sys.stderr, flush=True)

    return line


@dataclass(frozen=True)
class Replayed:
    """The corpus as written (note i is `sources[i]`), and two replays of it."""

    sources: tuple[str, ...]
    texts: tuple[str, ...]  # each note's body as the store reads it back
    first: Run
    second: Run
    archived: frozenset[str]

    @property
    def live(self) -> set[int]:
        return {i for i, source in enumerate(self.sources) if source not in self.archived}

    @property
    def proposed(self) -> set[frozenset[int]]:
        """The pairs the first replay drafted to reconcile, as corpus indices."""
        at = {source: i for i, source in enumerate(self.sources)}
        pairs = [(c.first.source, c.second.source) for c in self.first[0].conflicts]
        return {frozenset((at[a], at[b])) for a, b in pairs}

    def why_archived(self, i: int) -> str:
        for d in self.first[0].duplicates:
            if d.drop == self.sources[i]:
                keep = self.texts[self.sources.index(d.keep)]
                return f"near-duplicate of {keep!r}, distance {d.distance:.3f}"
        return "archived before the first replay"


def write_notes(corpus: Corpus, root: Path) -> tuple[list[str], list[str]]:
    """Every note appended to the day files under `root`: (sources, texts) in corpus order."""
    from runtime.memory.notes import FileNotes

    notes = FileNotes(root)
    atoms = [notes.append(note.text, now=note.written) for note in corpus.notes]
    return [a.source for a in atoms], [a.text for a in atoms]


def replay_once(paths: InstancePaths, config: InstanceConfig, embedder: Embedder) -> Run:
    """`mnemara replay --apply` in process: the config's days and threshold, no graph."""
    from runtime.memory.notes import FileNotes
    from runtime.memory.replay import plan_replay
    from runtime.memory.replay_write import apply_replay
    from runtime.memory.wiki import FileWiki

    notes = FileNotes(paths.memory)
    plan = plan_replay(notes, FileWiki(paths.wiki), embedder.embed, None,
                       days=config.replay_default_days, threshold=config.replay_default_threshold,
                       now=NOW, progress=progress("embedding notes for replay"),
                       graph_skipped="the bench links no graph")  # fmt: skip
    return plan, apply_replay(plan, notes, paths)


def replay(
    corpus: Corpus, paths: InstancePaths, config: InstanceConfig, embedder: Embedder,
    phases: dict[str, float],
) -> Replayed:  # fmt: skip
    from runtime.memory.notes import FileNotes

    started = time.perf_counter()
    sources, texts = write_notes(corpus, paths.memory)
    phases["write notes"] = time.perf_counter() - started
    runs = []
    for phase in ("replay", "second replay"):
        started = time.perf_counter()
        runs.append(replay_once(paths, config, embedder))
        phases[phase] = time.perf_counter() - started
    archived = frozenset(FileNotes(paths.memory).archived())
    return Replayed(tuple(sources), tuple(texts), runs[0], runs[1], archived)


def lost_statements(texts: tuple[str, ...], live: set[int]) -> tuple[list[Facts], set[str]]:
    """Per runtime/memory/facts.py: the statements (a note's facts as a whole) that no live
    note states (`compare` finds a difference with each), and the tokens (figures,
    identifiers, names, word stems, negation) of all notes that no live note has."""
    from runtime.memory.facts import compare, facts_of

    def tokens(facts: Facts) -> set[str]:
        found = {f"figure {x}" for x in facts.figures} | {f"name {x}" for x in facts.names}
        found |= {f"identifier {x}" for x in facts.identifiers} | {f"word {x}" for x in facts.words}
        return found | ({"negation"} if facts.negated else set())

    stated = [facts_of(text) for text in texts]
    kept = [stated[i] for i in live]
    lost = list(dict.fromkeys(f for f in stated if all(compare(f, k) for k in kept)))
    left: set[str] = set().union(*(tokens(stated[i]) for i in live))
    return lost, set().union(*(tokens(f) for f in stated)) - left


def pair_distances(corpus: Corpus, embedder: Embedder) -> list[float]:
    """The cosine distance between the notes of each differing pair, as replay measures it."""
    import numpy as np

    texts = [corpus.notes[i].text for p in corpus.differing for i in (p.first, p.second)]
    vectors = np.array(embedder.embed(texts), dtype=np.float64)
    return [max(0.0, float(1.0 - a @ b)) for a, b in zip(vectors[::2], vectors[1::2], strict=True)]


# -- search ------------------------------------------------------------------------------------


def hybrid_available() -> bool:
    """Whether this build's `Memory.search` takes a `mode` (hybrid search, issue 31)."""
    from runtime.memory.memory import Memory

    return "mode" in inspect.signature(Memory.search).parameters


def ask(memory: Memory, corpus: Corpus, replayed: Replayed, mode: str) -> list[Ranked]:
    """Every query of the corpus in one mode, its hits as corpus indices."""
    at = {source: i for i, source in enumerate(replayed.sources)}
    live = replayed.live
    extra: dict[str, Any] = {"mode": mode} if hybrid_available() else {}
    ranked = []
    for query in corpus.queries:
        hits = memory.search(query.text, k=K, **extra)
        ranked.append(Ranked(query, corpus.expected(query, live),
                             tuple(at.get(h.source, -1) for h in hits),
                             tuple(tuple(getattr(h, "matched", ())) for h in hits)))  # fmt: skip
    return ranked


def run_queries(
    corpus: Corpus, paths: InstancePaths, config: InstanceConfig, embedder: Embedder,
    replayed: Replayed, modes: list[str], phases: dict[str, float],
) -> dict[str, list[Ranked]]:  # fmt: skip
    """Index what replay left (`sync_index`), then run every query in each mode."""
    from runtime.memory.lance import open_lance_index
    from runtime.memory.memory import Memory, engine_openers, sync_index
    from runtime.memory.notes import FileNotes
    from runtime.memory.wiki import FileWiki

    _, open_graph = engine_openers(paths, config)
    memory = Memory(notes=FileNotes(paths.memory), wiki=FileWiki(paths.wiki), config=config,
                    open_index=lambda: open_lance_index(paths.root / "index", embedder),
                    open_graph=open_graph)  # fmt: skip
    try:
        started = time.perf_counter()
        sync_index(memory, progress("embedding notes for the index"))
        phases["index"] = time.perf_counter() - started
        ranked = {}
        for mode in modes:
            started = time.perf_counter()
            ranked[mode] = ask(memory, corpus, replayed, mode)
            phases[f"{mode} queries"] = time.perf_counter() - started
        return ranked
    finally:
        memory.close()


def judge(scores: Scores) -> tuple[list[str], list[str]]:
    """The target lines, and the names of the targets missed."""
    if "hybrid" not in scores:
        return ["hybrid search: not available in this build"], ["hybrid search"]
    lines, missed = [], []
    hybrid, vector = scores["hybrid"], scores["vector"]
    for kind in ("id", "number"):
        ok = hybrid[kind][1] >= ID_NUMBER_TARGET
        lines.append(f"hybrid recall@{K} on {kind} queries: {hybrid[kind][1]:.2f} "
                     f"(target >= {ID_NUMBER_TARGET:.2f}, {'PASS' if ok else 'MISS'})")  # fmt: skip
        missed += [] if ok else [f"hybrid recall@{K} on {kind}"]
    (h1, h), (v1, v) = hybrid["meaning"], vector["meaning"]
    lines.append(f"hybrid recall@{K} on meaning queries: {h:.2f} (target >= vector-only "
                 f"{v:.2f}, {'PASS' if h >= v else 'MISS'}); recall@1 {h1:.2f}, vector-only "
                 f"{v1:.2f}")  # fmt: skip
    return lines, missed + ([] if h >= v else [f"hybrid recall@{K} on meaning"])


def table(corpus: Corpus, scores: Scores) -> list[str]:
    modes = list(scores)
    head = "".join(f" {m + '@1':>9} {m + f'@{K}':>9}" for m in modes)
    lines = [f"  {'kind':<8} {'queries':>7}{head}"]
    for kind in QUERY_KINDS:
        count = sum(1 for q in corpus.queries if q.kind == kind)
        cells = "".join(f" {scores[m][kind][0]:>9.2f} {scores[m][kind][1]:>9.2f}" for m in modes)
        lines.append(f"  {kind:<8} {count:>7}{cells}")
    return lines


# -- the command -------------------------------------------------------------------------------


# fmt: off
def parse(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    ap.add_argument("--notes", type=int, default=240, metavar="N",
                    help="notes in the corpus (default 240)")
    ap.add_argument("--seed", type=int, default=1, help="the corpus's seed (default 1)")
    ap.add_argument("--queries", type=int, default=30, metavar="N",
                    help="queries of each kind at most (default 30)")
    ap.add_argument("--misses", type=int, default=8, metavar="N",
                    help="queries missed at @5 to show per mode (default 8; 0 for none)")
    ap.add_argument("--keep", type=Path, metavar="DIR",
                    help="make the home in DIR (new or empty) and keep it, to look at")
    ap.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    return ap.parse_args(argv)
# fmt: on


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    if args.queries < 1 or args.misses < 0:
        print("--queries must be 1 or more, and --misses 0 or more", file=sys.stderr)
        return 2
    if args.keep is not None and args.keep.exists() and any(args.keep.iterdir()):
        print(f"--keep {args.keep} is not empty; give a new or empty directory", file=sys.stderr)
        return 2
    started = time.perf_counter()
    try:
        corpus = make_corpus(args.notes, args.seed, args.queries)
    except CorpusError as exc:
        print(exc, file=sys.stderr)
        return 2
    phases = {"generate": time.perf_counter() - started}
    if args.keep is not None:
        args.keep.mkdir(parents=True, exist_ok=True)
        return measure(corpus, args, args.keep.resolve(), phases)
    with tempfile.TemporaryDirectory(prefix="mnemara-bench-recall-") as home:
        return measure(corpus, args, Path(home), phases)


def measure(corpus: Corpus, args: argparse.Namespace, home: Path, phases: dict[str, float]) -> int:
    from runtime.instance.config import InstanceConfig, save_config
    from runtime.instance.home import InstancePaths
    from runtime.memory.embed import build_embedder
    from runtime.memory.facts import differences
    from runtime.memory.replay import DUPLICATE_DISTANCE as cutoff

    os.environ["MNEMARA_HOME"] = str(home)  # whatever looks for a home finds this one
    paths = InstancePaths.for_name("recall", home)
    config = InstanceConfig()
    save_config(paths.config, config)
    embedder = build_embedder(config)
    lines: list[str] = []
    say = lines.append if args.json else print
    n, pairs, repeats = len(corpus.notes), len(corpus.differing), len(corpus.repeats)
    say(f"memory recall bench: {n} notes (seed {args.seed}): {pairs} pairs that differ in one "
        f"fact, {repeats} true repeats, {n - 2 * pairs - 2 * repeats} background; "
        f"{embedder.name}; home {home}")  # fmt: skip

    done = replay(corpus, paths, config, embedder, phases)
    (plan, result), live = done.first, done.live
    say(f"replay (days {plan.days}, threshold {plan.threshold}): read {plan.read}, archived "
        f"{len(result.archived)}, {len(plan.patterns)} patterns, {len(plan.conflicts)} pairs "
        f"to reconcile; {phases['replay']:.2f} s; {load_text()}")  # fmt: skip
    lost = corpus.lost_facts(live)
    statements, tokens = lost_statements(done.texts, live)
    missed = ["facts lost"] if lost or statements or tokens else []
    say(f"facts lost by replay: {len(lost)} (target 0, {'MISS' if missed else 'PASS'}); "
        f"cross-check with runtime/memory/facts.py: {len(statements)} statements and "
        f"{len(tokens)} tokens that no note left states")  # fmt: skip
    for fact in [*lost, *sorted(tokens)]:
        say(f"  lost: {fact}")
    for pair, gone in corpus.differing_archived(live):
        for i in gone:
            a = corpus.notes[i].text
            b = corpus.notes[pair.second if i == pair.first else pair.first].text
            why = "; ".join(differences(a, b)) or "(none)"
            say(f"  archived, of a pair differing in {pair.kind}: {a!r} ({done.why_archived(i)});"
                f" its pair {b!r}; differences: {why}")  # fmt: skip
    say(f"true duplicates archived: {corpus.repeats_archived(live)} of {repeats}")
    distances = pair_distances(corpus, embedder)
    near: dict[str, list[int]] = {}
    for pair, distance in zip(corpus.differing, distances, strict=True):
        near.setdefault(pair.kind, []).append(int(distance <= cutoff))
    proposed = corpus.pairs_proposed(done.proposed)
    say(f"{proposed} of {pairs} differing pairs proposed to reconcile; "
        f"{sum(map(sum, near.values()))} of the {pairs} are within the near-duplicate cutoff "
        f"{cutoff:.3f} (distances {min(distances):.3f} to {max(distances):.3f}; by the fact that "
        f"differs: {', '.join(f'{k} {sum(v)}/{len(v)}' for k, v in near.items())}); other "
        f"pairs proposed: {len(done.proposed) - proposed}")  # fmt: skip
    again = done.second[1]
    idle = not again.archived and not again.written
    missed += [] if idle else ["second apply"]
    say(f"second apply: {len(again.archived)} archived, {len(again.written)} files rewritten "
        f"(target 0 and 0, {'PASS' if idle else 'MISS'})")  # fmt: skip

    modes = ["vector", "hybrid"] if hybrid_available() else ["vector"]
    ranked = run_queries(corpus, paths, config, embedder, done, modes, phases)
    scores = {mode: recall(ranked[mode], K) for mode in modes}
    say(f"search over the {len(live)} notes left ({phases['index']:.2f} s to index them), "
        f"{len(corpus.queries)} queries, recall@1 and @{K}; {load_text()}")  # fmt: skip
    verdicts, failed = judge(scores)
    missed += failed
    for line in [*table(corpus, scores), *verdicts]:
        say(line)
    found = {m: {r.query for r in ranked[m] if r.found_within(K)} for m in modes}
    for mode in modes:
        for r in [r for r in ranked[mode] if not r.found_within(K)][: args.misses]:
            top = corpus.notes[r.found[0]].text if r.found and r.found[0] >= 0 else "(none)"
            why = f" {list(r.matched[0])}" if r.matched and r.matched[0] else ""
            also = "".join(f" ({m} found it)" for m in modes if r.query in found[m])
            say(f"  {mode} missed [{r.query.kind}] {r.query.text!r}{also}; first hit{why}: {top!r}")
    say(f"phases: {', '.join(f'{k} {v:.2f} s' for k, v in phases.items())}; {load_text()}")
    say("all targets met" if not missed else f"targets missed: {', '.join(missed)}")
    if args.json:
        figures = {
            "notes": n, "seed": args.seed, "facts_lost": lost, "lost_tokens": sorted(tokens),
            "lost_statements": len(statements), "true_duplicates": repeats,
            "true_duplicates_archived": corpus.repeats_archived(live),
            "differing_pairs": pairs, "differing_proposed": proposed,
            "differing_distances": [round(d, 4) for d in distances],
            "second_apply": {"archived": len(again.archived), "written": len(again.written)},
            "recall": {m: {kind: {"at1": s[0], f"at{K}": s[1]} for kind, s in score.items()}
                       for m, score in scores.items()},
            "hybrid_available": "hybrid" in modes, "phases": phases,
            "load": os.getloadavg(), "missed": missed, "lines": lines,
        }  # fmt: skip
        print(json.dumps(figures, indent=2))
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
