"""The soak's host child: `run_headless` with a driver that acts on each turn's input alone.

    python bench/soak.py --child TEAM_FILE --life ID

This is the code path of `mnemara up --headless`. Unless the team file names a rehearsal
script (then the bundled CLI answers, `--cli`), every panel gets a `SoakDriver`: it reads
only the current input of the turn (the last block of the request, after the transcript,
slots and inbox; runtime/prompt.py) and sends what the soak's protocol asks for, through
the panel's own `send_message` tool, gated by the request's approver as the live driver is:

- the producer, for each operator line `op-<n>`, sends `task op-<n>` to eng1 (n even) or
  eng2 (n odd);
- an engineer, for each `task op-<n>` in its input, sends `done op-<n>` to the producer;
- `done` messages need nothing.

Each turn sleeps a few to tens of milliseconds so kills land inside turns, and appends a
`start` and an `end` line to the marks file next to the team file: the parent aims its
mid-turn kills at them (the event log is written in batches, too late to aim with). A send
that comes back as an error (refused by the approver or the host's send limits) appends a
`refused` line: the soak reports it as the harness leaving the host's limits.

A panel takes at most `BATCH` messages a turn (the team file says so), the host's per-turn
send limit, since each is answered with one send; the child raises the host's send window,
which the harnesses outrun on purpose.
"""

from __future__ import annotations

import os
import random
import re
import time
import uuid
from collections.abc import AsyncGenerator, Callable
from functools import partial
from pathlib import Path
from typing import Any

import anyio

from panels.host import panel as panel_module
from panels.host.delivery import operator_route
from panels.host.process import run_headless
from panels.host.sendlimit import SendLimiter, SendLimits
from panels.team import PanelSpec, load_team
from runtime.driver import (
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
from runtime.scripted import find_tool

PRODUCER = "producer"
ENGINEERS = ("eng1", "eng2")
OPERATOR_ROUTE = operator_route(PRODUCER)
MARKS = "marks"
REFUSED = "refused"  # the marks line of a tool call that came back as an error
# An operator message is its own line in the input; a peer's payload is JSON in a fence.
OP_LINE = re.compile(r"^op-(\d+)$", re.MULTILINE)
TASK = re.compile(r"\btask op-(\d+)\b")
# The harnesses answer every message they take with one send, so a panel takes at most as
# many messages a turn as the host lets one turn send (SendLimits.per_turn): a bigger batch
# would have its extra replies refused, and a scripted driver does not come back for them.
BATCH = SendLimits().per_turn
# The host's outbound rate limit (panels/host/sendlimit.py: 60 sends per panel in 300 s)
# stops a worm at model speed; the harnesses send hundreds of tasks in a minute or two on
# purpose, so their hosts get a window limit they never reach. The per-turn limit and the
# copy and verbatim-forward checks stay as they are.
HARNESS_LIMITS = SendLimits(per_window=1_000_000)


def engineer_for(n: int) -> str:
    return ENGINEERS[n % 2]


def forward_text(n: int) -> str:
    return f"task op-{n}"


def reply_text(n: int) -> str:
    return f"done op-{n}"


def _unique(found: list[str]) -> list[int]:
    return list(dict.fromkeys(int(n) for n in found))


def plan_sends(panel: str, text: str) -> list[tuple[str, str]]:
    """(recipient, text) of every send a turn of `panel` makes for its input. Pure."""
    if panel == PRODUCER:
        return [(engineer_for(n), forward_text(n)) for n in _unique(OP_LINE.findall(text))]
    return [(PRODUCER, reply_text(n)) for n in _unique(TASK.findall(text))]


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

    def __init__(self, panel: str, marks: Path, rng: random.Random) -> None:
        self.panel = panel
        self.marks = marks
        self.rng = rng

    async def run_turn(self, request: TurnRequest) -> AsyncGenerator[DriverEvent, None]:
        mark(self.marks, "start", self.panel)
        text = turn_input(request)
        sends = plan_sends(self.panel, text)
        await anyio.sleep(self.rng.uniform(0.002, 0.02))
        for to, body in sends:
            call = ToolCall(
                f"soak-{uuid.uuid4().hex[:16]}",
                model_tool_name("send_message"),
                {"to": to, "text": body},
            )
            yield call
            yield await self._run_tool(request, call)
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


def soak_drivers(marks: Path, life: str) -> Callable[[PanelSpec], AgentDriver]:
    def make(spec: PanelSpec) -> AgentDriver:
        return SoakDriver(spec.name, marks, random.Random(f"{life}:{spec.name}"))

    return make


def lift_send_window() -> None:
    """This process's hosts limit their panels' sends with HARNESS_LIMITS."""
    module: Any = panel_module
    module.SendLimiter = partial(SendLimiter, HARNESS_LIMITS)


def run_child(team_file: str, life: str) -> None:
    """One life of the host; it runs until SIGTERM (clean stop) or SIGKILL."""
    lift_send_window()
    team = load_team(team_file)
    drivers = None
    if team.rehearsal is None:
        drivers = soak_drivers(Path(team_file).parent / MARKS, life)

    def out(line: str) -> None:
        print(line, flush=True)

    async def main() -> None:
        await run_headless(team, out=out, life=life, drivers=drivers)

    anyio.run(main, backend="trio")
