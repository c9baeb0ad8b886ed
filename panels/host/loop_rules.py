"""The team-level loop rules: settings, verdicts, and one pure function per rule.

The graph (loops.py) keeps, for every message it saw, the causal chains that end in it; each
rule here looks at one such chain (or one edge's recent send times) and says whether it is a
loop. Nothing here does I/O or reads a clock: times are given.

The four rules, exactly (defaults in `LoopSettings`):

- `ping_pong`: N (`ping_pong_exchanges`, 6) messages of one causal chain, each consumed by a
  turn that changed nothing (and each after the first sent by one), where the panels along
  the chain repeat (A -> B -> A, A -> B -> C -> A). A chain is cut by a turn that changed
  the world, and by a substantive message: at least `substantive_chars` characters of which
  at least `novelty` of the distinct words are new to the chain. Halts every panel on it.
- `ack_storm`: M (`ack_chain`, 4) acknowledgement-like messages in a row on one causal chain
  (each sent by a turn that consumed the one before, or naming it as what it acknowledges).
  Acknowledgement-like: a payload type in `ack_types`, or a short text (at most
  `ack_max_chars`) that holds a phrase of `ACK_PHRASES` and at most `ack_extra_words` other
  words that are not filler (`FILLER`). Halts every panel on the chain.
- `broadcast_cascade`: K (`cascade_generations`, 3) broadcasts in a row, each sent by a turn
  that consumed the one before and changed nothing. Halts the panels that broadcast.
- `edge_rate`: more than R (`rate_messages`, 30) messages on one directed edge (a broadcast
  is the edge `A -> *`) within W (`rate_window`, 300) seconds flags the edge; more than 2R
  halts its sender.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from peerbus.model import DEFAULT_SILENT_TYPES

RULES = ("ping_pong", "ack_storm", "broadcast_cascade", "edge_rate")

# Phrases that only acknowledge (lower case, words separated by one space).
ACK_PHRASES: tuple[str, ...] = (
    "thank you", "thanks", "thx", "ty", "got it", "received", "acknowledged", "ack", "noted",
    "ok", "okay", "roger", "understood", "will do", "sounds good", "great", "perfect",
    "you're welcome", "youre welcome", "welcome", "no problem", "np", "cheers", "likewise",
    "much appreciated", "appreciated", "confirmed", "copy that", "all good", "glad to help",
    "anytime", "same here", "good", "nice", "awesome", "done",
)  # fmt: skip
# Words that carry nothing once an acknowledgement phrase is found.
FILLER = frozenset(
    (
        "a", "an", "the", "and", "so", "very", "much", "too", "again", "for", "it", "this",
        "that", "your", "you", "me", "i", "we", "us", "our", "my", "all", "of", "to", "is",
        "was", "be", "are", "am", "on", "in", "as", "well", "just", "really", "message",
        "reply", "update", "note", "back", "indeed", "yes", "sure", "both",
    )
)  # fmt: skip
_WORD = re.compile(r"[a-z0-9']+")


@dataclass(frozen=True)
class LoopSettings:
    """Thresholds of the four rules; see the module docstring for what each bounds."""

    enabled: bool = True
    ping_pong_exchanges: int = 6
    substantive_chars: int = 200
    novelty: float = 0.5
    ack_chain: int = 4
    ack_max_chars: int = 80
    ack_extra_words: int = 2
    ack_types: frozenset[str] = DEFAULT_SILENT_TYPES
    cascade_generations: int = 3
    rate_messages: int = 30
    rate_window: float = 300.0
    # Messages and turns the graph remembers (the oldest are forgotten first).
    memory: int = 2000


@dataclass(frozen=True)
class Link:
    """One message of a chain, as the rules see it."""

    id: int
    sender: str
    recipient: str | None  # None: a broadcast


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


def words(text: str) -> frozenset[str]:
    """The distinct lower-case words of a text (for novelty)."""
    return frozenset(_WORD.findall(text.lower()))


def is_ack(kind: str | None, text: str, settings: LoopSettings) -> bool:
    """Whether a message only acknowledges: its payload type is in `ack_types`, or its text
    is at most `ack_max_chars` long, holds a phrase of `ACK_PHRASES` (case-insensitive) and,
    the phrases taken out, at most `ack_extra_words` words that are not `FILLER`."""
    if kind is not None and kind in settings.ack_types:
        return True
    flat = " ".join(text.lower().split())
    if not flat or len(flat) > settings.ack_max_chars:
        return False
    spoken = " " + " ".join(_WORD.findall(flat)) + " "
    found = False
    for phrase in sorted(ACK_PHRASES, key=len, reverse=True):
        needle = f" {phrase} "
        while needle in spoken:
            spoken = spoken.replace(needle, " ", 1)
            found = True
    rest = [w for w in spoken.split() if w not in FILLER]
    return found and len(rest) <= settings.ack_extra_words


def is_substantive(text: str, seen: frozenset[str], settings: LoopSettings) -> bool:
    """A message that moves a discussion on: at least `substantive_chars` characters, and at
    least `novelty` of its distinct words not among `seen` (the words of its chain so far)."""
    if len(text.strip()) < settings.substantive_chars:
        return False
    mine = words(text)
    return bool(mine) and len(mine - seen) / len(mine) >= settings.novelty


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


def ping_pong(chain: Sequence[Link], consumer: str, settings: LoopSettings) -> LoopVerdict | None:
    """`chain` ends in a message `consumer` has just consumed in a turn that changed nothing;
    every earlier message of it was consumed by such a turn too (the graph cuts chains at a
    world change or a substantive message). A loop when its last `ping_pong_exchanges`
    messages pass through a panel twice."""
    n = settings.ping_pong_exchanges
    if len(chain) < n:
        return None
    tail = chain[-n:]
    path = path_of(tail, consumer)
    if len(set(path)) == len(path):
        return None  # a pipeline, not a cycle
    cycle = cycle_text(path)
    return LoopVerdict(
        rule="ping_pong",
        edge=cycle,
        message_ids=tuple(link.id for link in tail),
        panels=tuple(sorted(set(path))),
        halt=True,
        detail=f"{n} messages went round with no world change on either side",
        figures=(("exchanges", float(len(tail))), ("limit", float(n))),
    )


def ack_storm(chain: Sequence[Link], settings: LoopSettings) -> LoopVerdict | None:
    """`chain` is a run of acknowledgement-like messages, each answering the one before. A
    storm once it is `ack_chain` long."""
    m = settings.ack_chain
    if len(chain) < m:
        return None
    tail = chain[-m:]
    path = path_of(tail, tail[-1].recipient)
    return LoopVerdict(
        rule="ack_storm",
        edge=cycle_text(path) if len(set(path)) < len(path) else " -> ".join(path),
        message_ids=tuple(link.id for link in tail),
        panels=tuple(sorted({link.sender for link in tail} | {p for p in path if p})),
        halt=True,
        detail=f"{m} acknowledgements in a row, each answering the one before",
        figures=(("acknowledgements", float(len(tail))), ("limit", float(m))),
    )


def broadcast_cascade(chain: Sequence[Link], settings: LoopSettings) -> LoopVerdict | None:
    """`chain` is a run of broadcasts, each sent by a turn that consumed the one before and
    changed nothing. A cascade once it is `cascade_generations` long."""
    k = settings.cascade_generations
    if len(chain) < k:
        return None
    tail = chain[-k:]
    return LoopVerdict(
        rule="broadcast_cascade",
        edge=" -> ".join(f"{link.sender} -> *" for link in tail[:1])
        + "".join(f" => {link.sender} -> *" for link in tail[1:]),
        message_ids=tuple(link.id for link in tail),
        panels=tuple(sorted({link.sender for link in tail})),
        halt=True,
        detail=f"a broadcast set off broadcasts {k} generations deep",
        figures=(("generations", float(len(tail))), ("limit", float(k))),
    )


def edge_rate(
    sender: str, recipient: str | None, sends: Sequence[tuple[float, int]], settings: LoopSettings
) -> LoopVerdict | None:
    """`sends` are the (time, id) of the edge's messages within the last `rate_window`
    seconds, newest last. More than `rate_messages` flags the edge; more than twice that
    halts its sender."""
    r = settings.rate_messages
    if len(sends) <= r:
        return None
    halt = len(sends) > 2 * r
    edge = f"{sender} -> {recipient if recipient is not None else '*'}"
    return LoopVerdict(
        rule="edge_rate",
        edge=edge,
        message_ids=tuple(ident for _, ident in sends[-(r + 1) :]),
        panels=(sender,) if halt else (),
        halt=halt,
        detail=(
            f"{len(sends)} messages within {settings.rate_window:g}s "
            f"(flagged above {r}, halted above {2 * r})"
        ),
        figures=(("messages", float(len(sends))), ("limit", float(2 * r if halt else r))),
    )
