"""Replays the labelled team-loop corpus through the real `TeamGraph`.

Used by tests/loops/test_corpus.py and bench/loop_corpus.py. One message graph per TOML file,
written as the turns of the team in the order they end:

    description = "what happens"
    label = "loop"            # or "legit"
    shape = "revert_and_redo" # the shape of traffic it stands for (SHAPES)
    rule = "ping_pong"        # loops: the rule that must fire first
    fire_by = 7               # loops: by this turn (1-based, counted after `repeat`)
    expect = "halt"           # loops: "halt" (default) or "flag" (edge_rate under the halt)
    gitignore = ["*.out"]     # files git does not see (default none); git = false: no repo
    [[rounds]]
    repeat = 6                # the round's turns, this many times over (default 1)
    gap = 30.0                # seconds from one turn to the next (default 30)
    backoff = 2.0             # each repetition's gaps are this many times the last's (1)
    [[rounds.turns]]
    panel = "engineer"
    changed = false           # true: the turn writes new content to a file of its own
    write = { "src/a.py" = "v2" }   # files the turn leaves with this content
    touch = ["status.log"]    # files the turn rewrites with a fresh timestamp
    slot = true               # the turn updates one of its slots (its notes)
    foreign = false           # true: sends from outside any turn (another program)
    send = [{ to = "reviewer", text = "round {n}", kind = "message", reply_to = "last" }]

The team shares one working tree. Each turn is measured as the guard measures it: the state
before its first call and at its end (the files it names, the git state over every file git
sees, its slots), and `measure_change` (panels/host/loops/world.py) makes the turn's
`WorldChange` of them. A turn consumes its panel's inbox: every message addressed to it, and
every broadcast of another panel, that it has not consumed yet and that the bus delivers (a
payload type in the acknowledgement types is settled by the bus without a turn, as peerbus
does). Its sends pass the host's real send limiter (`SendLimiter`, default `SendLimits`,
the copy rule aside): a send it refuses is not sent, and counted in `Outcome.refused`. The
graph gets the turn's end, then each of its sends, as the host feeds it. `{n}` in a text is
the round's repetition (1-based); `reply_to = "last"` names the turn's last consumed
message, or the last message sent (a foreign send).
"""

from __future__ import annotations

import hashlib
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from fnmatch import fnmatch
from pathlib import Path
from typing import Any, Protocol

from panels.host.delivery.sendlimit import SendLimiter, SendLimits, SendRefused
from panels.host.loops.graph import Sent, TeamGraph, TurnEnd
from panels.host.loops.rules import RULES, LoopSettings, LoopVerdict
from panels.host.loops.world import WorldChange, measure_change
from runtime.guard.sentinel import WorldState

CORPUS = Path(__file__).parent
ROOT = "/corpus/team"
SHAPES = {
    "legit": (
        "review_with_edits", "retries_with_backoff", "heartbeats_far_apart", "relay_pipeline",
        "long_qa_with_new_facts", "acks_of_real_work", "discussion", "fanout", "steady_reports",
    ),
    "loop": (
        "long_restatements", "bookkeeping_ping_pong", "revert_and_redo", "rate_burst",
        "returns_to_earlier_state", "repeated_exchange", "ack_chain", "broadcast_chain",
        "bookkeeping_broadcasts",
    ),
}  # fmt: skip
# The send limits the corpus is held to: the host's, but for the copy rule (a loop that
# repeats a text word for word is refused its third copy by the host; the corpus keeps the
# rules' view of it).
LIMITS = SendLimits(max_copies=10**6)


class CorpusError(Exception):
    """A graph file is malformed (the message names the file)."""


class Graph(Protocol):
    """What the replay feeds: the real `TeamGraph`, or the bench's copy of the old rules."""

    def turn_ended(self, event: TurnEnd) -> list[LoopVerdict]: ...

    def sent(self, event: Sent) -> list[LoopVerdict]: ...


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
    write: tuple[tuple[str, str], ...]
    touch: tuple[str, ...]
    slot: bool
    foreign: bool
    sends: tuple[Send, ...]
    gap: float
    n: int


@dataclass(frozen=True)
class Case:
    name: str
    description: str
    loop: bool
    shape: str
    rule: str | None
    fire_by: int | None
    expect: str
    git: bool
    gitignore: tuple[str, ...]
    turns: tuple[Turn, ...]


@dataclass
class Outcome:
    halted_at: int | None = None  # the 1-based turn whose events made the first halt
    halt: LoopVerdict | None = None
    flags: list[tuple[int, LoopVerdict]] = field(default_factory=list)
    events: int = 0
    refused: int = 0  # sends the host's send limiter refused
    changes: list[WorldChange] = field(default_factory=list)  # each turn's, in order


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
        shape = data["shape"]
        if shape not in SHAPES[data["label"]]:
            raise CorpusError(f"{name}: shape {shape!r} is not one of {SHAPES[data['label']]}")
        turns: list[Turn] = []
        for block in data["rounds"]:
            gap, growth = float(block.get("gap", 30.0)), float(block.get("backoff", 1.0))
            for n in range(1, int(block.get("repeat", 1)) + 1):
                for t in block["turns"]:
                    turns.append(_turn(t, n, gap * growth ** (n - 1)))
        return Case(name, data["description"], loop, shape, rule, data.get("fire_by"),
                    data.get("expect", "halt"), bool(data.get("git", True)),
                    tuple(data.get("gitignore", ())), tuple(turns))  # fmt: skip
    except (KeyError, TypeError, ValueError, tomllib.TOMLDecodeError) as exc:
        raise CorpusError(f"{name}: malformed graph file ({exc!r})") from None


def _turn(t: dict[str, Any], n: int, gap: float) -> Turn:
    sends = tuple(_send(s, n) for s in t.get("send", ()))
    write = tuple((p.replace("{n}", str(n)), str(v).replace("{n}", str(n)))
                  for p, v in t.get("write", {}).items())  # fmt: skip
    flags = (bool(t.get("slot", False)), bool(t.get("foreign", False)))
    return Turn(t["panel"], bool(t.get("changed", False)), write, tuple(t.get("touch", ())),
                *flags, sends, gap, n)  # fmt: skip


def _send(raw: dict[str, Any], n: int) -> Send:
    to = raw["to"]
    return Send(None if to == "*" else to, raw.get("text", "").replace("{n}", str(n)),
                raw.get("kind", "message"), raw.get("reply_to"))  # fmt: skip


class World:
    """The team's working tree and each panel's slots, measured as the guard measures."""

    def __init__(self, case: Case) -> None:
        self.case = case
        self.files: dict[str, str] = {}
        self.slots: dict[str, dict[str, str]] = {}

    def state(self, panel: str, paths: tuple[str, ...]) -> WorldState:
        files = tuple((p, self.files.get(p, "gone")) for p in paths)
        slots = tuple(sorted(self.slots.get(panel, {}).items()))
        return WorldState(files_written=files, slots=slots, git_tree=self._git())

    def turn(self, turn: Turn, index: int, bookkeeping: tuple[str, ...]) -> WorldChange:
        writes = dict(turn.write)
        if turn.changed:
            writes[f"work/{turn.panel}.txt"] = f"turn {index}"
        writes |= {path: f"stamp {index}" for path in turn.touch}
        paths = tuple(f"{ROOT}/{p}" for p in writes)
        first = self.state(turn.panel, paths)
        for path, content in writes.items():
            self.files[f"{ROOT}/{path}"] = _digest(content)
        if turn.slot:
            self.slots.setdefault(turn.panel, {})["progress"] = _digest(f"note {index}")
        last = self.state(turn.panel, paths)
        return measure_change(first, last, dict(first.files_written), bookkeeping)

    def _git(self) -> str | None:
        if not self.case.git:
            return None
        seen = sorted((p, d) for p, d in self.files.items()
                      if not any(fnmatch(p, f"*/{g}") for g in self.case.gitignore))  # fmt: skip
        return _digest(repr(seen))


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def replay(
    case: Case,
    settings: LoopSettings | None = None,
    *,
    graph: Graph | None = None,
    between_turns: Callable[[int, Graph], Graph] | None = None,
) -> Outcome:
    """Feed the case to a fresh graph (or `graph`); stop at the first halting verdict.
    `between_turns(index, graph)` is called before each turn and may hand back another
    graph to go on with (a restarted host's)."""
    settings = settings or LoopSettings()
    fed: Graph = graph if graph is not None else TeamGraph(settings)
    world = World(case)
    outcome = Outcome()
    messages: list[Sent] = []
    consumed: dict[str, set[int]] = {}
    limiters: dict[str, SendLimiter] = {}
    clock = Clock()
    for index, turn in enumerate(case.turns, 1):
        if between_turns is not None:
            fed = between_turns(index, fed)
        clock.now += turn.gap
        now = clock.now
        found: list[LoopVerdict] = []
        last: int | None = messages[-1].id if messages else None
        if not turn.foreign:
            done = consumed.setdefault(turn.panel, set())
            inbox = [m.id for m in messages if _delivered(m, turn.panel, settings)
                     and m.id not in done]  # fmt: skip
            done.update(inbox)
            last = inbox[-1] if inbox else None
            change = world.turn(turn, index, settings.bookkeeping)
            outcome.changes.append(change)
            found += fed.turn_ended(TurnEnd(turn.panel, index, tuple(inbox), change, now))
            outcome.events += 1
        limiter = limiters.setdefault(turn.panel, SendLimiter(LIMITS, clock=clock))
        for send in turn.sends:
            try:
                limiter.check(turn=index, recipient=send.to or "*", text=send.text or None)
            except SendRefused:
                outcome.refused += 1
                continue
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
            found += fed.sent(sent)
            outcome.events += 1
        for verdict in found:
            if not verdict.halt:
                outcome.flags.append((index, verdict))
            elif outcome.halt is None:
                outcome.halt, outcome.halted_at = verdict, index
        if outcome.halt is not None:
            break
    return outcome


@dataclass
class Clock:
    """The replay's time, read by the send limiters (the turns set it)."""

    now: float = 0.0

    def __call__(self) -> float:
        return self.now


def _delivered(message: Sent, panel: str, settings: LoopSettings) -> bool:
    if message.kind in settings.ack_types:
        return False  # protocol noise: the bus settles it without a turn
    if message.recipient is None:
        return message.sender != panel
    return message.recipient == panel
