"""The team-level loop rules: settings, verdicts, and one pure function per rule.

The graph (graph.py) keeps, for every message it saw, the causal chains that end in it; each
rule here looks at one such chain (or one edge's recent send times) and says whether it is a
loop. Nothing here does I/O or reads a clock: times are given, and each rule has a window.

Progress, as the graph judges it before a rule is asked:
- a turn progressed when its measured world change (loops/world.py) has a work part ending in
  a state its chain has not seen: bookkeeping (slots, logs, stamps, files git ignores) and
  returns to an earlier state of the chain do not count;
- a message says something new when, against what the last `chain_memory` messages of its
  causal line said (loops/text.py: masked content words and word pairs), it brings at least
  `novel_units` new units making at least `novelty` of its own. Length plays no part.

The four rules, exactly (defaults in `LoopSettings`):

- `ping_pong`: N (`ping_pong_exchanges`, 6) messages of one causal chain within W
  (`ping_pong_window`, 900 s), each consumed by a turn that made no progress (and each
  after the first sent by one, and saying nothing new), where the panels along the chain
  repeat (A -> B -> A, A -> B -> C -> A). Halts every panel on it. Why: a conversation that
  goes round six times in a quarter of an hour with no work and no news is not converging;
  the window lets exchanges that are far apart (a heartbeat every ten minutes, retries
  that back off) run on, since they cost little and often wait for the world outside.
- `ack_storm`: M (`ack_chain`, 4) acknowledgement-like messages in a row on one causal chain
  (each sent by a turn that consumed the one before, or naming it as what it acknowledges),
  within `ack_window` (600 s). Acknowledgement-like: a payload type in `ack_types`, or a
  short text (at most `ack_max_chars`) that holds a phrase of `ACK_PHRASES` and at most
  `ack_extra_words` other words that are not filler. Halts every panel on the chain. Why:
  one acknowledgement is polite, a second one answers it, four in ten minutes is politeness
  feeding itself.
- `broadcast_cascade`: K (`cascade_generations`, 3) broadcasts in a row, each sent by a turn
  that consumed the one before and made no progress, within `cascade_window` (600 s). Halts
  the panels that broadcast. Why: each generation multiplies the team's turns.
- `edge_rate`: more than R (`rate_messages`, 30) messages on one directed edge (a broadcast
  is the edge `A -> *`) within `rate_window` (300 s) flags the edge; more than
  `rate_halt` (R x `rate_halt_ratio` = 45) halts its sender. Why these numbers: the host's
  send limits (panels/host/delivery/sendlimit.py, `SendLimits`) let a panel send 10 messages a turn
  and 60 in any 300 s, so a bound must sit below 60 in the same 300 s to ever be reached
  (the old halt, above 60, never could). 45 is five turns of 10 sends to one recipient
  within five minutes: more than the recipient can consume in its own turns (each takes one
  bounded batch), so the sender is flooding it, while a producer that hands one engineer a
  few dozen tasks stays under the flag.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from panels.host.loops import text as loop_text
from peerbus.model import DEFAULT_SILENT_TYPES
from runtime.instance.guard_settings import DEFAULT_BOOKKEEPING_FILES

RULES = ("ping_pong", "ack_storm", "broadcast_cascade", "edge_rate")

# Paths whose changes are bookkeeping, never progress: the sentinel's list (one list for both).
BOOKKEEPING: tuple[str, ...] = DEFAULT_BOOKKEEPING_FILES


@dataclass(frozen=True)
class LoopSettings:
    """Thresholds and windows of the four rules; see the module docstring for each."""

    enabled: bool = True
    ping_pong_exchanges: int = 6
    ping_pong_window: float = 900.0
    # Ignored since issue 29 (substance is measured by content, not length); kept so that a
    # team file's `[team.loops] substantive_chars` still loads.
    substantive_chars: int = 0
    novelty: float = 0.3
    novel_units: int = 3
    chain_memory: int = 16  # messages of a causal line whose words count as already said
    ack_chain: int = 4
    ack_window: float = 600.0
    ack_max_chars: int = 80
    ack_extra_words: int = 2
    ack_types: frozenset[str] = DEFAULT_SILENT_TYPES
    cascade_generations: int = 3
    cascade_window: float = 600.0
    rate_messages: int = 30
    rate_halt_ratio: float = 1.5
    rate_window: float = 300.0
    bookkeeping: tuple[str, ...] = BOOKKEEPING
    world_memory: int = 32  # world states a chain remembers (for returns to an earlier one)
    # Messages and turns the graph remembers (the oldest are forgotten first), in memory and
    # in host.sqlite alike.
    memory: int = 2000

    @property
    def rate_halt(self) -> int:
        """Messages on one edge within `rate_window` above which its sender is halted."""
        return max(self.rate_messages + 1, int(self.rate_messages * self.rate_halt_ratio))


@dataclass(frozen=True)
class Link:
    """One message of a chain, as the rules see it: `at` when it was sent."""

    id: int
    sender: str
    recipient: str | None  # None: a broadcast
    at: float = 0.0


@dataclass(frozen=True)
class LoopVerdict:
    """What a rule found: `edge` and `message_ids` are the evidence, `panels` what to stop
    (a flag, `halt` false, stops nothing)."""

    rule: str
    edge: str
    message_ids: tuple[int, ...]
    panels: tuple[str, ...]
    halt: bool
    detail: str
    figures: tuple[tuple[str, float], ...] = ()

    def describe(self) -> str:
        """One line naming the rule's finding, the edge and the message ids."""
        ids = ", ".join(str(i) for i in self.message_ids)
        return f"{self.edge}: {self.detail} (messages {ids})"


def is_ack(kind: str | None, text: str, settings: LoopSettings) -> bool:
    """Whether a message only acknowledges, with the settings' bounds (loop_text.is_ack)."""
    return loop_text.is_ack(kind, text, ack_types=settings.ack_types,
                            max_chars=settings.ack_max_chars,
                            extra_words=settings.ack_extra_words)  # fmt: skip


def says_something_new(new: int, share: float, settings: LoopSettings) -> bool:
    """A message brings news: at least `novel_units` new units, `novelty` of its own."""
    return new >= settings.novel_units and share >= settings.novelty


def path_of(chain: Sequence[Link], last: str | None) -> list[str]:
    """The panels a chain passes through: each sender, then `last` (its final recipient)."""
    path = [link.sender for link in chain]
    if last is not None:
        path.append(last)
    return path


def cycle_text(path: Sequence[str]) -> str:
    """A repeating path shown as its cycle: "a -> b -> a" for a, b, a, b, a."""
    first: list[str] = []
    for panel in path:
        if panel in first:
            break
        first.append(panel)
    return " -> ".join([*first, first[0]]) if first else ""


def span(chain: Sequence[Link]) -> float:
    """Seconds from a chain's first message to its last."""
    return chain[-1].at - chain[0].at if chain else 0.0


def ping_pong(chain: Sequence[Link], consumer: str, settings: LoopSettings) -> LoopVerdict | None:
    """`chain` ends in a message `consumer` has just consumed in a turn that made no
    progress; every earlier message of it was consumed by such a turn too, and said nothing
    new (the graph cuts chains at progress and at news). A loop when its last
    `ping_pong_exchanges` messages, sent within `ping_pong_window`, pass through a panel
    twice."""
    n = settings.ping_pong_exchanges
    if len(chain) < n:
        return None
    tail = chain[-n:]
    if span(tail) > settings.ping_pong_window:
        return None  # spread out: heartbeats, retries that back off
    path = path_of(tail, consumer)
    if len(set(path)) == len(path):
        return None  # a pipeline, not a cycle
    return LoopVerdict(
        rule="ping_pong",
        edge=cycle_text(path),
        message_ids=tuple(link.id for link in tail),
        panels=tuple(sorted(set(path))),
        halt=True,
        detail=(
            f"{n} messages went round within {span(tail):.0f}s with no progress and nothing "
            f"new said (bound: {n} within {settings.ping_pong_window:g}s)"
        ),
        figures=(
            ("exchanges", float(len(tail))),
            ("limit", float(n)),
            ("seconds", span(tail)),
            ("window", settings.ping_pong_window),
        ),
    )


def ack_storm(chain: Sequence[Link], settings: LoopSettings) -> LoopVerdict | None:
    """`chain` is a run of acknowledgement-like messages, each answering the one before. A
    storm once its last `ack_chain` were sent within `ack_window`."""
    m = settings.ack_chain
    if len(chain) < m:
        return None
    tail = chain[-m:]
    if span(tail) > settings.ack_window:
        return None
    path = path_of(tail, tail[-1].recipient)
    return LoopVerdict(
        rule="ack_storm",
        edge=cycle_text(path) if len(set(path)) < len(path) else " -> ".join(path),
        message_ids=tuple(link.id for link in tail),
        panels=tuple(sorted({link.sender for link in tail} | {p for p in path if p})),
        halt=True,
        detail=(
            f"{m} acknowledgements in a row within {span(tail):.0f}s, each answering the one "
            f"before (bound: {m} within {settings.ack_window:g}s)"
        ),
        figures=(
            ("acknowledgements", float(len(tail))),
            ("limit", float(m)),
            ("seconds", span(tail)),
            ("window", settings.ack_window),
        ),
    )


def broadcast_cascade(chain: Sequence[Link], settings: LoopSettings) -> LoopVerdict | None:
    """`chain` is a run of broadcasts, each sent by a turn that consumed the one before and
    made no progress. A cascade once its last `cascade_generations` were sent within
    `cascade_window`."""
    k = settings.cascade_generations
    if len(chain) < k:
        return None
    tail = chain[-k:]
    if span(tail) > settings.cascade_window:
        return None
    return LoopVerdict(
        rule="broadcast_cascade",
        edge=" -> ".join(f"{link.sender} -> *" for link in tail[:1])
        + "".join(f" => {link.sender} -> *" for link in tail[1:]),
        message_ids=tuple(link.id for link in tail),
        panels=tuple(sorted({link.sender for link in tail})),
        halt=True,
        detail=(
            f"a broadcast set off broadcasts {k} generations deep within {span(tail):.0f}s "
            f"(bound: {k} within {settings.cascade_window:g}s)"
        ),
        figures=(
            ("generations", float(len(tail))),
            ("limit", float(k)),
            ("seconds", span(tail)),
            ("window", settings.cascade_window),
        ),
    )


def edge_rate(
    sender: str, recipient: str | None, sends: Sequence[tuple[float, int]], settings: LoopSettings
) -> LoopVerdict | None:
    """`sends` are the (time, id) of the edge's messages within the last `rate_window`
    seconds, newest last. More than `rate_messages` flags the edge; more than `rate_halt`
    halts its sender."""
    r, top = settings.rate_messages, settings.rate_halt
    if len(sends) <= r:
        return None
    halt = len(sends) > top
    edge = f"{sender} -> {recipient if recipient is not None else '*'}"
    return LoopVerdict(
        rule="edge_rate",
        edge=edge,
        message_ids=tuple(ident for _, ident in sends[-(r + 1) :]),
        panels=(sender,) if halt else (),
        halt=halt,
        detail=(
            f"{len(sends)} messages within {settings.rate_window:g}s "
            f"(flagged above {r}, halted above {top})"
        ),
        figures=(
            ("messages", float(len(sends))),
            ("limit", float(top if halt else r)),
            ("window", settings.rate_window),
        ),
    )
