"""The team's message graph: which turn consumed which message and sent which, and the loops
in it (the rules are in loop_rules.py). Pure: fed events, given times, no I/O.

The host feeds two kinds of event, in the order they happen:
- `TurnEnd`: a panel's turn ended, with the ids of the messages it consumed and whether it
  changed the world (the guard's `TurnTally.changed_world`);
- `Sent`: a message went on the bus, with the turn that sent it (its key: the host uses the
  turn's input row id, which its outbox entries carry).
A turn ends before its sends are published, so when a message is sent the graph knows what
its turn consumed: the message then continues the chains of those messages. Three chains
end in every message: the idle chain (ping-pong), the acknowledgement chain and the
broadcast chain; each is kept to its last few links, so a chain costs the same at any length.
Memory is bounded: the newest `memory` messages and turns, and per edge the send times of
the last rate window (at most 2R + 1 of them).
"""

from __future__ import annotations

from collections import OrderedDict, deque
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TypeVar

from panels.host.loop_rules import (
    Link,
    LoopSettings,
    LoopVerdict,
    ack_storm,
    broadcast_cascade,
    edge_rate,
    is_ack,
    is_substantive,
    ping_pong,
    words,
)

Edge = tuple[str, str | None]
K = TypeVar("K")
V = TypeVar("V")


@dataclass(frozen=True)
class Sent:
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
class TurnEnd:
    """A turn ended: `turn` its key (as `Sent.turn` names it), `consumed` the peer message
    ids it was given, `changed_world` what the guard measured."""

    panel: str
    turn: int
    consumed: tuple[int, ...]
    changed_world: bool


@dataclass(frozen=True)
class Node:
    """One message the graph remembers, with the three chains that end in it."""

    link: Link
    words: frozenset[str]
    ack: bool
    idle: tuple[Link, ...]
    acks: tuple[Link, ...]
    cascade: tuple[Link, ...]


class TeamGraph:
    """The message graph of one team; `sent` and `turn_ended` return what the rules found."""

    def __init__(self, settings: LoopSettings | None = None) -> None:
        self.settings = settings or LoopSettings()
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

    def turn_ended(self, event: TurnEnd) -> list[LoopVerdict]:
        """Note a turn; a turn that changed nothing may close a ping-pong."""
        self.turns[(event.panel, event.turn)] = event
        self._bound(self.turns)
        if not self.settings.enabled or event.changed_world:
            return []
        longest: tuple[Link, ...] = ()
        for node in self._parents(event.consumed, event.panel):
            if len(node.idle) > len(longest):
                longest = node.idle
        verdict = ping_pong(longest, event.panel, self.settings)
        return [verdict] if verdict is not None else []

    def sent(self, event: Sent) -> list[LoopVerdict]:
        """Note a message; it may make an acknowledgement storm, a broadcast cascade, or an
        edge's rate too high. A message already known (published again) is ignored."""
        if event.id in self.nodes:
            return []
        s = self.settings
        link = Link(event.id, event.sender, event.recipient)
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

    def forgive(self, panel: str) -> None:
        """The operator resumed `panel`: what it said and was told so far no longer counts."""

        def involved(node: Node) -> bool:
            chains = (node.idle, node.acks, node.cascade)
            return any(panel in (lk.sender, lk.recipient) for chain in chains for lk in chain)

        for ident in [i for i, n in self.nodes.items() if involved(n)]:
            del self.nodes[ident]
        for key in [k for k in self.turns if k[0] == panel]:
            del self.turns[key]
        for edge in [e for e in self.edges if panel in e]:
            del self.edges[edge]
            self.flagged.discard(edge)
            self.rate_halted.discard(edge)

    # -- chains -------------------------------------------------------------------------------

    def _idle(self, link: Link, text: str, consumed: list[Node]) -> tuple[Link, ...]:
        """The idle chain of a message sent by a turn that changed nothing: the longest idle
        chain it consumed, unless the message is substantive (then it starts one)."""
        longest: tuple[Link, ...] = ()
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

    def _extend(self, link: Link, chains: Iterable[tuple[Link, ...]]) -> tuple[Link, ...]:
        longest: tuple[Link, ...] = max(chains, key=len, default=())
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

    def _rate(self, link: Link, at: float) -> LoopVerdict | None:
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
