"""The team's message graph: which turn consumed which message and sent which, and the loops
in it (the rules are in rules.py). Pure: fed events, given times, no I/O.

The host feeds two kinds of event, in the order they happen:
- `TurnEnd`: a panel's turn ended, with the ids of the messages it consumed and its measured
  world change (loops/world.py);
- `Sent`: a message went on the bus, with the turn that sent it (its key: the host uses the
  turn's input row id, which its outbox entries carry).
A turn ends before its sends are published, so when a message is sent the graph knows what
its turn consumed: the message then continues the chains of those messages. Three chains
end in every message: the idle chain (ping-pong), the acknowledgement chain and the
broadcast chain; each is kept to its last few links, so a chain costs the same at any length.
Beside them every message and turn carries what its causal line has seen: the world states
(for `advances`) and the ids of its last `chain_memory` messages (whose words count as said).

Memory is bounded: the newest `memory` messages and turns, and per edge the send times of
the last rate window (at most `rate_halt` + 1 of them). What changed since the last
`take_changes` can be written out (state.py encodes it, host.sqlite keeps it) and read
back with `restore`, so a host restart continues every chain and rate window.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from panels.host.loops.rules import (
    Link,
    LoopSettings,
    LoopVerdict,
    ack_storm,
    broadcast_cascade,
    edge_rate,
    is_ack,
    ping_pong,
    says_something_new,
)
from panels.host.loops.text import content_units, news
from panels.host.loops.world import NO_CHANGE, WorldChange, advances

Edge = tuple[str, str | None]
TurnKey = tuple[str, int]
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
    ids it was given, `change` what it did to the world, `at` when it ended."""

    panel: str
    turn: int
    consumed: tuple[int, ...]
    change: WorldChange = NO_CHANGE
    at: float = 0.0


@dataclass(frozen=True)
class Turn:
    """A turn the graph remembers: whether it progressed, and the world states its chain
    has seen (its own included), oldest first."""

    consumed: tuple[int, ...]
    progressed: bool
    states: tuple[str, ...]
    at: float


@dataclass(frozen=True)
class Node:
    """One message the graph remembers, with the three chains that end in it, the messages
    of its causal line before it (`lineage`, oldest first) and the world states it has seen."""

    link: Link
    units: frozenset[int]
    ack: bool
    idle: tuple[Link, ...]
    acks: tuple[Link, ...]
    cascade: tuple[Link, ...]
    lineage: tuple[int, ...] = ()
    states: tuple[str, ...] = ()


@dataclass
class EdgeSends:
    """An edge's sends within the rate window, and whether it is over each bound now."""

    sends: deque[tuple[float, int]]
    flagged: bool = False
    halted: bool = False


@dataclass
class Changes:
    """What a graph changed since it was last stored (or what a store gives back)."""

    nodes: list[Node] = field(default_factory=list)
    turns: list[tuple[TurnKey, Turn]] = field(default_factory=list)
    edges: list[tuple[Edge, EdgeSends]] = field(default_factory=list)
    dropped_nodes: list[int] = field(default_factory=list)
    dropped_turns: list[TurnKey] = field(default_factory=list)
    dropped_edges: list[Edge] = field(default_factory=list)

    def __bool__(self) -> bool:
        return any((self.nodes, self.turns, self.edges, self.dropped_nodes,
                    self.dropped_turns, self.dropped_edges))  # fmt: skip


class Dirty(Generic[K]):
    """Keys written since the last take (most recent last) and keys dropped, both bounded."""

    def __init__(self, bound: int) -> None:
        self.bound = bound
        self.written: OrderedDict[K, None] = OrderedDict()
        self.dropped: OrderedDict[K, None] = OrderedDict()

    def touch(self, key: K) -> None:
        self.written.pop(key, None)
        self.written[key] = None
        self.dropped.pop(key, None)
        while len(self.written) > self.bound:
            self.written.popitem(last=False)

    def drop(self, key: K) -> None:
        self.written.pop(key, None)
        self.dropped[key] = None
        while len(self.dropped) > self.bound:
            self.dropped.popitem(last=False)

    def take(self) -> list[K]:
        keys, self.written = list(self.written), OrderedDict()
        return keys

    def take_dropped(self) -> list[K]:
        keys, self.dropped = list(self.dropped), OrderedDict()
        return keys


class TeamGraph:
    """The message graph of one team; `sent` and `turn_ended` return what the rules found."""

    def __init__(self, settings: LoopSettings | None = None) -> None:
        self.settings = settings or LoopSettings()
        s = self.settings
        # Enough links for every rule to see its whole window (and a little context).
        self.keep = 2 * max(s.ping_pong_exchanges, s.ack_chain, s.cascade_generations)
        self.nodes: OrderedDict[int, Node] = OrderedDict()
        self.turns: OrderedDict[TurnKey, Turn] = OrderedDict()
        self.edges: OrderedDict[Edge, EdgeSends] = OrderedDict()
        # What changed since the last `take_changes` (bounded like the tables: a graph that
        # nobody stores forgets the oldest keys).
        self.dirty_nodes: Dirty[int] = Dirty(3 * s.memory)
        self.dirty_turns: Dirty[TurnKey] = Dirty(3 * s.memory)
        self.dirty_edges: Dirty[Edge] = Dirty(3 * s.memory)

    def knows(self, ident: int) -> bool:
        return ident in self.nodes

    # -- events -----------------------------------------------------------------------------

    def turn_ended(self, event: TurnEnd) -> list[LoopVerdict]:
        """Note a turn; a turn that made no progress may close a ping-pong."""
        s = self.settings
        parents = list(self._parents(event.consumed, event.panel))
        seen = _merge((n.states for n in parents), s.world_memory)
        progressed = advances(event.change, seen)
        states = _merge((seen, event.change.states), s.world_memory)
        key = (event.panel, event.turn)
        self.turns.pop(key, None)
        self.turns[key] = Turn(event.consumed, progressed, states, event.at)
        self.dirty_turns.touch(key)
        self._bound(self.turns)
        if not s.enabled or progressed:
            return []
        longest = max((n.idle for n in parents), key=len, default=())
        verdict = ping_pong(longest, event.panel, s)
        return [verdict] if verdict is not None else []

    def sent(self, event: Sent) -> list[LoopVerdict]:
        """Note a message; it may make an acknowledgement storm, a broadcast cascade, or an
        edge's rate too high. A message already known (published again) is ignored."""
        if event.id in self.nodes:
            return []
        s = self.settings
        link = Link(event.id, event.sender, event.recipient, event.at)
        turn = self.turns.get((event.sender, event.turn)) if event.turn is not None else None
        quiet = turn is not None and not turn.progressed
        consumed = list(self._parents(turn.consumed if turn else (), event.sender))
        answered = consumed + [n for n in self._known(event.reply_to) if n not in consumed]
        ack = is_ack(event.kind, event.text, s)
        units = content_units(event.text)
        lineage = _merge(((*n.lineage, n.link.id) for n in answered), s.chain_memory)
        said = (self.nodes[i].units for i in lineage if i in self.nodes)
        novel = says_something_new(*news(units, said), s)
        states = turn.states if turn else _merge((n.states for n in answered), s.world_memory)
        longest = max((n.idle for n in consumed), key=len, default=())
        node = Node(
            link=link,
            units=units,
            ack=ack,
            idle=(*longest, link)[-self.keep :] if quiet and not novel else (link,),
            acks=self._extend(link, [n.acks for n in answered if n.ack]) if ack else (),
            cascade=(
                self._extend(link, [n.cascade for n in consumed if n.cascade] if quiet else [])
                if event.recipient is None
                else ()
            ),
            lineage=lineage,
            states=states,
        )
        self.nodes[event.id] = node
        self.dirty_nodes.touch(event.id)
        self._bound(self.nodes)
        if not s.enabled:
            return []
        found = [
            v
            for v in (
                ack_storm(node.acks, s) if ack else None,
                broadcast_cascade(node.cascade, s) if node.cascade else None,
                self._rate(link),
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
            self.dirty_nodes.drop(ident)
        for key in [k for k in self.turns if k[0] == panel]:
            del self.turns[key]
            self.dirty_turns.drop(key)
        for edge in [e for e in self.edges if panel in e]:
            del self.edges[edge]
            self.dirty_edges.drop(edge)

    # -- what to store ------------------------------------------------------------------------

    def take_changes(self) -> Changes:
        """What changed since the last call: the messages, turns and edges written or
        updated (oldest first), and the keys of those a resume dropped. Entries forgotten
        for the memory bound are neither: the store prunes its own to the same bound."""
        changes = Changes(
            nodes=[self.nodes[i] for i in self.dirty_nodes.take() if i in self.nodes],
            turns=[(k, self.turns[k]) for k in self.dirty_turns.take() if k in self.turns],
            edges=[(e, self.edges[e]) for e in self.dirty_edges.take() if e in self.edges],
            dropped_nodes=self.dirty_nodes.take_dropped(),
            dropped_turns=self.dirty_turns.take_dropped(),
            dropped_edges=self.dirty_edges.take_dropped(),
        )
        return changes

    def restore(self, kept: Changes) -> None:
        """Take back what a store kept (each kind oldest first), as an earlier life left it."""
        for node in kept.nodes:
            self.nodes[node.link.id] = node
        for key, turn in kept.turns:
            self.turns[key] = turn
        for edge, sends in kept.edges:
            self.edges[edge] = sends
        self._bound(self.nodes)
        self._bound(self.turns)
        self._bound(self.edges)

    # -- chains -------------------------------------------------------------------------------

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

    def _rate(self, link: Link) -> LoopVerdict | None:
        """Count the send on its edge; a verdict the first time the edge crosses the flag
        bound and the halt bound, again only after it has come back under."""
        s = self.settings
        edge: Edge = (link.sender, link.recipient)
        window = self.edges.pop(edge, None) or EdgeSends(deque(maxlen=s.rate_halt + 1))
        self.edges[edge] = window  # most recently used last
        self.dirty_edges.touch(edge)
        self._bound(self.edges)
        sends = window.sends
        sends.append((link.at, link.id))
        while sends and link.at - sends[0][0] > s.rate_window:
            sends.popleft()
        window.flagged = window.flagged and len(sends) > s.rate_messages
        window.halted = window.halted and len(sends) > s.rate_halt
        verdict = edge_rate(link.sender, link.recipient, list(sends), s)
        if verdict is None or (window.halted if verdict.halt else window.flagged):
            return None
        if verdict.halt:
            window.halted = True
        else:
            window.flagged = True
        return verdict

    def _bound(self, table: OrderedDict[K, V]) -> None:
        while len(table) > self.settings.memory:
            table.popitem(last=False)


def _merge(parts: Iterable[Sequence[K]], limit: int) -> tuple[K, ...]:
    """The items of `parts` in order, each once (its last place), the newest `limit`."""
    merged: dict[K, None] = {}
    for part in parts:
        for item in part:
            merged.pop(item, None)
            merged[item] = None
    return tuple(merged)[-limit:] if limit > 0 else ()
