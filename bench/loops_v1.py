"""The team-loop rules as they were before issue 29, kept for bench/loop_corpus.py only.

A copy of the decision functions and the graph of panels/host/loops/rules.py and graph.py at
b4a06af, so the bench can print the old rules beside the new ones on the same corpus. Not
used by the product. `OldGraph` takes the replay's events (the new `TurnEnd` and `Sent`) and
gives the old graph what it took then: a turn's world change as one boolean, true whatever
changed (bookkeeping and reverts included), and no times for the chains.
"""

from __future__ import annotations

import re
from collections import OrderedDict, deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from panels.host.loops.graph import Sent, TurnEnd
from panels.host.loops.rules import LoopVerdict
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
class OldSettings:
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
class OldLink:
    """One message of a chain, as the rules see it."""

    id: int
    sender: str
    recipient: str | None  # None: a broadcast


def words(text: str) -> frozenset[str]:
    """The distinct lower-case words of a text (for novelty)."""
    return frozenset(_WORD.findall(text.lower()))


def is_ack(kind: str | None, text: str, settings: OldSettings) -> bool:
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


def is_substantive(text: str, seen: frozenset[str], settings: OldSettings) -> bool:
    """A message that moves a discussion on: at least `substantive_chars` characters, and at
    least `novelty` of its distinct words not among `seen` (the words of its chain so far)."""
    if len(text.strip()) < settings.substantive_chars:
        return False
    mine = words(text)
    return bool(mine) and len(mine - seen) / len(mine) >= settings.novelty


def path_of(chain: Sequence[OldLink], last: str | None) -> list[str]:
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


def ping_pong(chain: Sequence[OldLink], consumer: str, settings: OldSettings) -> LoopVerdict | None:
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


def ack_storm(chain: Sequence[OldLink], settings: OldSettings) -> LoopVerdict | None:
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


def broadcast_cascade(chain: Sequence[OldLink], settings: OldSettings) -> LoopVerdict | None:
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
    sender: str, recipient: str | None, sends: Sequence[tuple[float, int]], settings: OldSettings
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


Edge = tuple[str, str | None]
K = TypeVar("K")
V = TypeVar("V")


@dataclass(frozen=True)
class OldSent:
    """A message on the bus. `recipient` None is a broadcast; `turn` the key of the sending
    turn (None: unknown, e.g. a message another host published); `reply_to` the id the
    payload says it answers (an ack's `ack_of`)."""

    id: int
    sender: str
    recipient: str | None
    text: str = ""
    kind: str | None = "message"
    reply_to: int | None = None
    turn: int | None = None
    at: float = 0.0


@dataclass(frozen=True)
class OldTurnEnd:
    """A turn ended: `turn` its key (as `Sent.turn` names it), `consumed` the peer message
    ids it was given, `changed_world` what the guard measured."""

    panel: str
    turn: int
    consumed: tuple[int, ...]
    changed_world: bool


@dataclass(frozen=True)
class Node:
    """One message the graph remembers, with the three chains that end in it."""

    link: OldLink
    words: frozenset[str]
    ack: bool
    idle: tuple[OldLink, ...]
    acks: tuple[OldLink, ...]
    cascade: tuple[OldLink, ...]


class OldTeamGraph:
    """The message graph of one team; `sent` and `turn_ended` return what the rules found."""

    def __init__(self, settings: OldSettings | None = None) -> None:
        self.settings = settings or OldSettings()
        s = self.settings
        # Enough links for every rule to see its whole window (and a little context).
        self.keep = 2 * max(s.ping_pong_exchanges, s.ack_chain, s.cascade_generations)
        self.nodes: OrderedDict[int, Node] = OrderedDict()
        self.turns: OrderedDict[tuple[str, int], TurnEnd] = OrderedDict()
        self.edges: OrderedDict[Edge, deque[tuple[float, int]]] = OrderedDict()
        self.flagged: set[Edge] = set()
        self.rate_halted: set[Edge] = set()

    def knows(self, ident: int) -> bool:
        return ident in self.nodes

    # -- events -----------------------------------------------------------------------------

    def turn_ended(self, event: OldTurnEnd) -> list[LoopVerdict]:
        """Note a turn; a turn that changed nothing may close a ping-pong."""
        self.turns[(event.panel, event.turn)] = event
        self._bound(self.turns)
        if not self.settings.enabled or event.changed_world:
            return []
        longest: tuple[OldLink, ...] = ()
        for node in self._parents(event.consumed, event.panel):
            if len(node.idle) > len(longest):
                longest = node.idle
        verdict = ping_pong(longest, event.panel, self.settings)
        return [verdict] if verdict is not None else []

    def sent(self, event: OldSent) -> list[LoopVerdict]:
        """Note a message; it may make an acknowledgement storm, a broadcast cascade, or an
        edge's rate too high. A message already known (published again) is ignored."""
        if event.id in self.nodes:
            return []
        s = self.settings
        link = OldLink(event.id, event.sender, event.recipient)
        turn = self.turns.get((event.sender, event.turn)) if event.turn is not None else None
        quiet = turn is not None and not turn.changed_world
        consumed = list(self._parents(turn.consumed if turn else (), event.sender))
        answered = consumed + [n for n in self._known(event.reply_to) if n not in consumed]
        ack = is_ack(event.kind, event.text, s)
        mine = words(event.text)
        node = Node(
            link=link,
            words=mine,
            ack=ack,
            idle=self._idle(link, event.text, consumed) if quiet else (link,),
            acks=self._extend(link, [n.acks for n in answered if n.ack]) if ack else (),
            cascade=(
                self._extend(link, [n.cascade for n in consumed if n.cascade] if quiet else [])
                if event.recipient is None
                else ()
            ),
        )
        self.nodes[event.id] = node
        self._bound(self.nodes)
        if not s.enabled:
            return []
        found = [
            v
            for v in (
                ack_storm(node.acks, s) if ack else None,
                broadcast_cascade(node.cascade, s) if node.cascade else None,
                self._rate(link, event.at),
            )
            if v is not None
        ]
        return found

    # -- chains -------------------------------------------------------------------------------

    def _idle(self, link: OldLink, text: str, consumed: list[Node]) -> tuple[OldLink, ...]:
        """The idle chain of a message sent by a turn that changed nothing: the longest idle
        chain it consumed, unless the message is substantive (then it starts one)."""
        longest: tuple[OldLink, ...] = ()
        for node in consumed:
            if len(node.idle) > len(longest):
                longest = node.idle
        seen: set[str] = set()
        for earlier in longest:
            known = self.nodes.get(earlier.id)
            if known is not None:
                seen |= known.words
        if is_substantive(text, frozenset(seen), self.settings):
            return (link,)
        return (*longest, link)[-self.keep :]

    def _extend(self, link: OldLink, chains: Iterable[tuple[OldLink, ...]]) -> tuple[OldLink, ...]:
        longest: tuple[OldLink, ...] = max(chains, key=len, default=())
        return (*longest, link)[-self.keep :]

    def _parents(self, ids: Iterable[int], panel: str) -> Iterable[Node]:
        """The known messages among `ids` that were addressed to `panel` (or to everyone)."""
        for ident in ids:
            node = self.nodes.get(ident)
            if node is not None and node.link.recipient in (panel, None):
                yield node

    def _known(self, ident: int | None) -> list[Node]:
        node = self.nodes.get(ident) if ident is not None else None
        return [node] if node is not None else []

    def _rate(self, link: OldLink, at: float) -> LoopVerdict | None:
        """Count the send on its edge; a verdict the first time the edge crosses R (a flag)
        and 2R (a halt), again only after it has come back under."""
        s = self.settings
        edge: Edge = (link.sender, link.recipient)
        sends = self.edges.pop(edge, None) or deque(maxlen=2 * s.rate_messages + 1)
        self.edges[edge] = sends  # most recently used last
        self._bound(self.edges)
        sends.append((at, link.id))
        while sends and at - sends[0][0] > s.rate_window:
            sends.popleft()
        if len(sends) <= s.rate_messages:
            self.flagged.discard(edge)
        if len(sends) <= 2 * s.rate_messages:
            self.rate_halted.discard(edge)
        verdict = edge_rate(link.sender, link.recipient, list(sends), s)
        if verdict is None:
            return None
        seen = self.rate_halted if verdict.halt else self.flagged
        if edge in seen:
            return None
        seen.add(edge)
        return verdict

    def _bound(self, table: OrderedDict[K, V]) -> None:
        while len(table) > self.settings.memory:
            table.popitem(last=False)


class OldGraph:
    """The old graph behind the replay's events: a turn changed the world when anything
    changed at all (`WorldChange.any`)."""

    def __init__(self, settings: OldSettings | None = None) -> None:
        self.graph = OldTeamGraph(settings)

    def turn_ended(self, event: TurnEnd) -> list[LoopVerdict]:
        changed = event.change.any
        return self.graph.turn_ended(OldTurnEnd(event.panel, event.turn, event.consumed, changed))

    def sent(self, event: Sent) -> list[LoopVerdict]:
        old = OldSent(event.id, event.sender, event.recipient, event.text, event.kind,
                      event.reply_to, event.turn, event.at)  # fmt: skip
        return self.graph.sent(old)
