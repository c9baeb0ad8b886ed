"""The team graph's state as host.sqlite rows: encode what changed, decode what was kept. Pure.

Three kinds of row (panels/hostdb/loopstate.py stores them as they are):

    node  key: the message id;         data: its link, content units, acknowledgement flag,
                                       three chains, lineage and world states
    turn  key: [panel, turn key];      data: consumed ids, progressed, world states, time
    edge  key: [sender, recipient];    data: the (time, id) of its sends in the rate window,
                                       and whether it is flagged or halted now

Keys and data are compact JSON. A row that does not decode (written by another version, or
damaged) is skipped: losing one message of a chain delays a halt, it never causes one.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Iterable
from typing import Any

from panels.host.loops.graph import Changes, Edge, EdgeSends, Node, Turn
from panels.host.loops.rules import Link, LoopSettings
from panels.hostdb.loopstate import LoopRow

NODE, TURN, EDGE = "node", "turn", "edge"


def encode(changes: Changes) -> tuple[list[LoopRow], list[tuple[str, str]]]:
    """The rows to write and the (kind, key) to delete for `changes`."""
    rows = [LoopRow(NODE, str(n.link.id), _dump(_node(n))) for n in changes.nodes]
    rows += [LoopRow(TURN, _dump(list(k)), _dump(_turn(t))) for k, t in changes.turns]
    rows += [LoopRow(EDGE, _dump(list(e)), _dump(_edge(w))) for e, w in changes.edges]
    dropped = [(NODE, str(i)) for i in changes.dropped_nodes]
    dropped += [(TURN, _dump(list(k))) for k in changes.dropped_turns]
    dropped += [(EDGE, _dump(list(e))) for e in changes.dropped_edges]
    return rows, dropped


def decode(rows: Iterable[LoopRow], settings: LoopSettings) -> Changes:
    """What `rows` (oldest first) held, for `TeamGraph.restore`; bad rows are skipped."""
    kept = Changes()
    for row in rows:
        try:
            data = json.loads(row.data)
            if row.kind == NODE:
                kept.nodes.append(_read_node(data))
            elif row.kind == TURN:
                panel, turn = json.loads(row.key)
                kept.turns.append(((str(panel), int(turn)), _read_turn(data)))
            elif row.kind == EDGE:
                sender, recipient = json.loads(row.key)
                edge: Edge = (str(sender), None if recipient is None else str(recipient))
                kept.edges.append((edge, _read_edge(data, settings)))
        except (ValueError, TypeError, KeyError, IndexError):
            continue
    return kept


def _dump(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


def _link(link: Link) -> list[Any]:
    return [link.id, link.sender, link.recipient, link.at]


def _read_link(raw: list[Any]) -> Link:
    ident, sender, recipient, at = raw
    return Link(int(ident), str(sender), None if recipient is None else str(recipient), float(at))


def _node(node: Node) -> dict[str, Any]:
    return {
        "l": _link(node.link),
        "u": sorted(node.units),
        "a": node.ack,
        "i": [_link(k) for k in node.idle],
        "k": [_link(k) for k in node.acks],
        "c": [_link(k) for k in node.cascade],
        "n": list(node.lineage),
        "s": list(node.states),
    }


def _read_node(data: dict[str, Any]) -> Node:
    return Node(
        link=_read_link(data["l"]),
        units=frozenset(int(u) for u in data["u"]),
        ack=bool(data["a"]),
        idle=tuple(_read_link(k) for k in data["i"]),
        acks=tuple(_read_link(k) for k in data["k"]),
        cascade=tuple(_read_link(k) for k in data["c"]),
        lineage=tuple(int(i) for i in data["n"]),
        states=tuple(str(s) for s in data["s"]),
    )


def _turn(turn: Turn) -> dict[str, Any]:
    return {"c": list(turn.consumed), "p": turn.progressed, "s": list(turn.states), "t": turn.at}


def _read_turn(data: dict[str, Any]) -> Turn:
    return Turn(
        consumed=tuple(int(i) for i in data["c"]),
        progressed=bool(data["p"]),
        states=tuple(str(s) for s in data["s"]),
        at=float(data["t"]),
    )


def _edge(window: EdgeSends) -> dict[str, Any]:
    return {"s": [[at, ident] for at, ident in window.sends], "f": window.flagged,
            "h": window.halted}  # fmt: skip


def _read_edge(data: dict[str, Any], settings: LoopSettings) -> EdgeSends:
    sends = deque(((float(at), int(i)) for at, i in data["s"]), maxlen=settings.rate_halt + 1)
    return EdgeSends(sends, flagged=bool(data["f"]), halted=bool(data["h"]))
