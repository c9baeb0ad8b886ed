"""The soak's host child: `run_headless` with a driver that acts on each turn's input alone.

    python bench/soak.py --child TEAM_FILE --life ID

This is the code path of `mnemara up --headless`. Unless the team file names a rehearsal
script (then the bundled CLI answers, `--cli`), every panel gets a `SoakDriver`: it reads
only the current input of the turn (the last block of the request, after the transcript,
slots and inbox; runtime/turn/prompt.py) and sends what the soak's protocol asks for, through
the panel's own `send_message` tool, gated by the request's approver as the live driver is:

- the producer, for each operator line `op-<n>`, sends `task op-<n>` to eng1 (n even) or
  eng2 (n odd);
- an engineer, for each `task op-<n>` in its input, sends `done op-<n>` to the producer;
- `done` messages need nothing.

Each turn sleeps a few to tens of milliseconds so kills land inside turns, and appends a
`start` and an `end` line to the marks file next to the team file: the parent aims its
mid-turn kills at them (the event log is written in batches, too late to aim with). A send
that comes back as an error (refused by the approver or the host's send limits) appends a
`refused` line, with the call: the soak then looks for the text on the bus (sent later by a
follow-up turn, or never).

Faults (issue 30), from `faults.json` beside the team file (`Faults`):
- `raise`: a panel's turn whose input holds one of its listed op numbers sends once, then
  raises RuntimeError, once per op over all lives (a marker file made with O_EXCL): the
  batch must come again, counted, and the partial send must never go out;
- `chatty`: an engineer (or `chatty_panel` alone) answers a listed task with a second
  message, `note op-<n>`, so a full batch asks for more sends than a turn may make: the ones
  refused must go out in the follow-up turn the host owes (its note lists them; this driver
  sends what it lists, and marks the turn `follow_up`).

What a turn sends is its team's protocol's to say (soak_protocol.py): the producer and
engineers above, or the ring of `--ring N` (soak_ring.py).

The host takes at most `per_turn` messages a turn (its own claim bound, no team setting
needed); the harnesses raise the send window in the team file (`SENDS_TABLE`), which they
outrun on purpose.
"""

from __future__ import annotations

import json
import os
import random
import re
import time
import uuid
from collections.abc import AsyncGenerator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import anyio

from panels.host.delivery.feed import operator_route
from panels.host.delivery.sendlimit import SendLimits
from panels.host.process import run_headless
from panels.team import PanelSpec, TeamSpec, load_team
from runtime.turn.driver import (
    AgentDriver,
    Done,
    DriverEvent,
    TextDelta,
    ToolCall,
    ToolCallRequest,
    ToolOutput,
    ToolResult,
    TurnRequest,
    Usage,
    call_tool,
    deny_text,
    model_tool_name,
)
from runtime.turn.scripted import find_tool

if TYPE_CHECKING:
    from soak_protocol import Protocol

PRODUCER = "producer"
ENGINEERS = ("eng1", "eng2")
OPERATOR_ROUTE = operator_route(PRODUCER)
MARKS = "marks"
REFUSED = "refused"  # the marks line of a tool call that came back as an error
# An operator message is its own line in the input; a peer's payload is JSON in a fence.
OP_LINE = re.compile(r"^op-(\d+)$", re.MULTILINE)
TASK = re.compile(r"\btask op-(\d+)\b")
# What one turn may send (and so take): the host's default, which the team files keep.
BATCH = SendLimits().per_turn
# The host's outbound rate limit (panels/host/delivery/sendlimit.py: 60 sends per panel in 300 s)
# stops a worm at model speed; the harnesses send hundreds of tasks in a minute or two on
# purpose, so their team files give a window limit they never reach. The per-turn limit and
# the copy and verbatim-forward checks stay as they are.
SENDS_TABLE = ["[team.sends]", "per_window = 1000000"]
FAULTS = "faults.json"
RAISED = "raised"  # the directory of "<panel>-<n>" markers: each op raises once, ever
FOLLOWED_UP = "follow_up"  # the marks line of a follow-up turn the host ran
CHATTY = re.compile(r"^- to ([A-Za-z0-9._-]+): (.+)$", re.MULTILINE)
FOLLOW_UP = "Note from the host: your last turn tried to send more than"


@dataclass(frozen=True)
class Faults:
    """Which ops make which panel's driver raise once, and which tasks an engineer answers
    with a second message."""

    raises: dict[str, frozenset[int]]
    chatty: frozenset[int]
    chatty_panel: str = ""  # the one panel that is chatty; "": any that gets a listed op

    @classmethod
    def read(cls, path: Path) -> Faults:
        try:
            data = json.loads(path.read_text())
        except FileNotFoundError:
            return cls({}, frozenset())
        raises = {p: frozenset(int(n) for n in ns) for p, ns in data.get("raise", {}).items()}
        chatty = frozenset(int(n) for n in data.get("chatty", ()))
        return cls(raises, chatty, str(data.get("chatty_panel", "")))

    def chatty_for(self, panel: str) -> frozenset[int]:
        return self.chatty if self.chatty_panel in ("", panel) else frozenset()

    def to_json(self) -> str:
        raises = {p: sorted(ns) for p, ns in self.raises.items()}
        data = {"raise": raises, "chatty": sorted(self.chatty), "chatty_panel": self.chatty_panel}
        return json.dumps(data, sort_keys=True)


def note_text(n: int) -> str:
    return f"note op-{n}"


def engineer_for(n: int) -> str:
    return ENGINEERS[n % 2]


def forward_text(n: int) -> str:
    return f"task op-{n}"


def reply_text(n: int) -> str:
    return f"done op-{n}"


def _unique(found: list[str]) -> list[int]:
    return list(dict.fromkeys(int(n) for n in found))


def follow_up_sends(text: str) -> list[tuple[str, str]]:
    """A follow-up turn's note (what the host could not send), sent as it lists it."""
    return [(to, body.strip()) for to, body in CHATTY.findall(text)]


def plan_sends(
    panel: str, text: str, chatty: frozenset[int] = frozenset()
) -> list[tuple[str, str]]:
    """(recipient, text) of every send a turn of `panel` makes for its input. Pure."""
    if text.startswith(FOLLOW_UP):
        return follow_up_sends(text)
    if panel == PRODUCER:
        return [(engineer_for(n), forward_text(n)) for n in _unique(OP_LINE.findall(text))]
    sends = []
    for n in _unique(TASK.findall(text)):
        sends.append((PRODUCER, reply_text(n)))
        if n in chatty:
            sends.append((PRODUCER, note_text(n)))
    return sends


def ops_in(panel: str, text: str) -> list[int]:
    """The op numbers a turn of `panel` acts on."""
    found = OP_LINE.findall(text) if panel == PRODUCER else TASK.findall(text)
    return _unique(found)


def turn_input(request: TurnRequest) -> str:
    """The current input: build_prompt puts it last, after everything older."""
    return str(request.blocks[-1].get("text", "")) if request.blocks else ""


def mark(path: Path, what: str, panel: str, detail: str = "") -> None:
    # One short O_APPEND write: lines from concurrent turns never interleave.
    line = f"{what} {panel} {time.time():.6f}" + (f" {detail}" if detail else "")
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, f"{' '.join(line.split())}\n".encode())
    finally:
        os.close(fd)


class SoakDriver:
    """An `AgentDriver` for one panel of the soak team."""

    def __init__(
        self,
        panel: str,
        marks: Path,
        rng: random.Random,
        faults: Faults | None = None,
        protocol: Protocol | None = None,
    ) -> None:
        self.panel = panel
        self.marks = marks
        self.rng = rng
        self.faults = faults or Faults({}, frozenset())
        # None: the producer and engineers of this module (the multi-host bench's too).
        self.sends = protocol.sends if protocol is not None else plan_sends
        self.ops_in = protocol.ops_in if protocol is not None else ops_in

    def _raises(self, text: str) -> int | None:
        """The op this turn raises on, if it is listed and has not raised yet (in any life)."""
        listed = self.faults.raises.get(self.panel, frozenset())
        for n in self.ops_in(self.panel, text):
            if n not in listed or text.startswith(FOLLOW_UP):
                continue
            marker = self.marks.parent / RAISED / f"{self.panel}-{n}"
            marker.parent.mkdir(exist_ok=True)
            try:
                os.close(os.open(marker, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
            except FileExistsError:
                continue
            return n
        return None

    async def run_turn(self, request: TurnRequest) -> AsyncGenerator[DriverEvent, None]:
        mark(self.marks, "start", self.panel)
        text = turn_input(request)
        if text.startswith(FOLLOW_UP):
            mark(self.marks, FOLLOWED_UP, self.panel)
        sends = self.sends(self.panel, text, self.faults.chatty_for(self.panel))
        raises = self._raises(text)
        await anyio.sleep(self.rng.uniform(0.002, 0.02))
        for to, body in sends:
            call = ToolCall(
                f"soak-{uuid.uuid4().hex[:16]}",
                model_tool_name("send_message"),
                {"to": to, "text": body},
            )
            yield call
            yield await self._run_tool(request, call)
            if raises is not None:  # one send queued, then a fault of the driver's own
                mark(self.marks, "raised", self.panel, f"op-{raises}")
                raise RuntimeError(f"soak fault: the driver raised on op-{raises}")
        await anyio.sleep(self.rng.uniform(0.001, 0.02))
        yield TextDelta(f"{self.panel}: {len(sends)} send(s)")
        yield Usage(input_tokens=max(1, len(text) // 4), output_tokens=8)
        yield Done()
        # Runs when the session asks for the event after Done: the turn is about to commit.
        mark(self.marks, "end", self.panel)

    async def _run_tool(self, request: TurnRequest, call: ToolCall) -> ToolResult:
        decision = await request.approver.decide(ToolCallRequest(call.id, call.name, call.input))
        spec = find_tool(request.sdk_tools, call.name)
        if not decision.allow:
            output = ToolOutput(deny_text(decision), is_error=True)
        elif spec is None:
            output = ToolOutput(f"no tool {call.name} in this turn", is_error=True)
        else:
            output = await call_tool(spec, decision.updated_input or call.input)
        if output.is_error:
            # A send refused is a reply the protocol owes and never gets: marked, so the soak
            # reports the harness outside the host's limits, not a message lost.
            mark(self.marks, REFUSED, self.panel, f"{call.input}: {output.text[:200]}")
        return ToolResult(call.id, output.text, output.is_error)


def soak_drivers(marks: Path, life: str, protocol: Protocol) -> Callable[[PanelSpec], AgentDriver]:
    faults = Faults.read(marks.parent / FAULTS)

    def make(spec: PanelSpec) -> AgentDriver:
        rng = random.Random(f"{life}:{spec.name}")
        return SoakDriver(spec.name, marks, rng, faults, protocol)

    return make


def run_child(team_file: str, life: str, protocol_for: Callable[[TeamSpec], Protocol]) -> None:
    """One life of the host; it runs until SIGTERM (clean stop) or SIGKILL."""
    team = load_team(team_file)
    drivers = None
    if team.rehearsal is None:
        drivers = soak_drivers(Path(team_file).parent / MARKS, life, protocol_for(team))

    def out(line: str) -> None:
        print(line, flush=True)

    async def main() -> None:
        await run_headless(team, out=out, life=life, drivers=drivers)

    anyio.run(main, backend="trio")
