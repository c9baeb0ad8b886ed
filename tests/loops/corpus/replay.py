"""Replays the labelled team-loop corpus through the real `TeamGraph`.

Used by tests/loops/test_corpus.py and bench/loop_corpus.py. One message graph per TOML file,
written as the turns of the team in the order they end:

    description = "what happens"
    label = "loop"            # or "legit"
    rule = "ping_pong"        # loops: the rule that must fire first
    fire_by = 7               # loops: by this turn (1-based, counted after `repeat`)
    expect = "halt"           # loops: "halt" (default) or "flag" (edge_rate under 2R)
    [[rounds]]
    repeat = 6                # the round's turns, this many times over (default 1)
    gap = 30.0                # seconds from one turn to the next (default 30)
    [[rounds.turns]]
    panel = "engineer"
    changed = false           # did the turn change the world
    foreign = false           # true: sends from outside any turn (another program)
    send = [{ to = "reviewer", text = "round {n}", kind = "message", reply_to = "last" }]

A turn consumes its panel's inbox: every message addressed to it, and every broadcast of
another panel, that it has not consumed yet and that the bus delivers (a payload type in the
acknowledgement types is settled by the bus without a turn, as peerbus does). The graph gets
the turn's end, then each of its sends, as the host feeds it. `{n}` in a text is the round's
repetition (1-based); `reply_to = "last"` names the turn's last consumed message, or the last
message sent (a foreign send).
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from panels.host.loop_rules import RULES, LoopSettings, LoopVerdict
from panels.host.loops import Sent, TeamGraph, TurnEnd

CORPUS = Path(__file__).parent


class CorpusError(Exception):
    """A graph file is malformed (the message names the file)."""


@dataclass(frozen=True)
class Send:
    to: str | None  # None: a broadcast ("*")
    text: str
    kind: str
    reply_to: str | None


@dataclass(frozen=True)
class Turn:
    panel: str
    changed: bool
    foreign: bool
    sends: tuple[Send, ...]
    gap: float
    n: int


@dataclass(frozen=True)
class Case:
    name: str
    description: str
    loop: bool
    rule: str | None
    fire_by: int | None
    expect: str
    turns: tuple[Turn, ...]


@dataclass
class Outcome:
    halted_at: int | None = None  # the 1-based turn whose events made the first halt
    halt: LoopVerdict | None = None
    flags: list[tuple[int, LoopVerdict]] = field(default_factory=list)
    events: int = 0


def load_all() -> list[Case]:
    return [load(path) for path in sorted(CORPUS.glob("*.toml"))]


def load(path: Path) -> Case:
    name = path.stem
    try:
        data = tomllib.loads(path.read_text())
        loop = {"loop": True, "legit": False}[data["label"]]
        rule = data.get("rule")
        if loop and rule not in RULES:
            raise CorpusError(f"{name}: rule {rule!r} is not one of {RULES}")
        turns: list[Turn] = []
        for block in data["rounds"]:
            for n in range(1, int(block.get("repeat", 1)) + 1):
                for t in block["turns"]:
                    sends = tuple(_send(s, n) for s in t.get("send", ()))
                    turns.append(Turn(t["panel"], bool(t.get("changed", False)),
                                      bool(t.get("foreign", False)), sends,
                                      float(block.get("gap", 30.0)), n))  # fmt: skip
        return Case(name, data["description"], loop, rule, data.get("fire_by"),
                    data.get("expect", "halt"), tuple(turns))  # fmt: skip
    except (KeyError, TypeError, ValueError, tomllib.TOMLDecodeError) as exc:
        raise CorpusError(f"{name}: malformed graph file ({exc!r})") from None


def _send(raw: dict[str, Any], n: int) -> Send:
    to = raw["to"]
    return Send(None if to == "*" else to, raw.get("text", "").replace("{n}", str(n)),
                raw.get("kind", "message"), raw.get("reply_to"))  # fmt: skip


def replay(case: Case, settings: LoopSettings | None = None) -> Outcome:
    """Feed the case to a fresh graph; stop at the first halting verdict."""
    settings = settings or LoopSettings()
    graph = TeamGraph(settings)
    outcome = Outcome()
    messages: list[Sent] = []
    consumed: dict[str, set[int]] = {}
    now = 0.0
    for index, turn in enumerate(case.turns, 1):
        now += turn.gap
        found: list[LoopVerdict] = []
        last: int | None = messages[-1].id if messages else None
        if not turn.foreign:
            done = consumed.setdefault(turn.panel, set())
            inbox = [m.id for m in messages if _delivered(m, turn.panel, settings)
                     and m.id not in done]  # fmt: skip
            done.update(inbox)
            last = inbox[-1] if inbox else None
            found += graph.turn_ended(TurnEnd(turn.panel, index, tuple(inbox), turn.changed))
            outcome.events += 1
        for send in turn.sends:
            sent = Sent(
                id=len(messages) + 1,
                sender=turn.panel,
                recipient=send.to,
                text=send.text,
                kind=send.kind,
                reply_to=last if send.reply_to == "last" else None,
                turn=None if turn.foreign else index,
                at=now,
            )
            messages.append(sent)
            if turn.foreign:
                last = sent.id
            found += graph.sent(sent)
            outcome.events += 1
        for verdict in found:
            if not verdict.halt:
                outcome.flags.append((index, verdict))
            elif outcome.halt is None:
                outcome.halt, outcome.halted_at = verdict, index
        if outcome.halt is not None:
            break
    return outcome


def _delivered(message: Sent, panel: str, settings: LoopSettings) -> bool:
    if message.kind in settings.ack_types:
        return False  # protocol noise: the bus settles it without a turn
    if message.recipient is None:
        return message.sender != panel
    return message.recipient == panel
