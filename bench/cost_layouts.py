"""The prompt layouts the cost benchmark compares, each run through the real CLI.

- ours: the real thing. `open_session` + `ClaudeDriver`; the prompt is `runtime.turn.prompt`'s
  head block, one block per stored row with our cache marker on the last, then the tail; the
  window is trimmed in steps (`runtime.window.plan`), and the session picks the cache TTL.
- original: the original mnemara's layout. The whole window flattened into one text block
  with the new input at its end, no cache marker of ours, and FIFO trimming every turn (the
  oldest rows go as soon as a cap is passed).
- like-for-like: the same flattened layout over the same rows, trimmed on our schedule (in
  steps, to the same low-water mark), so that only the layout differs from ours.

The flattened layouts are sent through the same `ClaudeDriver`, so the CLI adds exactly what
it adds to ours, and offer the model the same tools (taken from a session opened on another
instance), so the tool list weighs the same. Each records every turn's requests from the
rehearsal server's own accounting. A `GapClock` shared by a layout's server and its session
puts `gap` seconds between turns without waiting for them.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from runtime.claude import ClaudeDriver
from runtime.instance.config import InstanceConfig, save_config
from runtime.instance.home import InstancePaths
from runtime.rehearsal import RehearsalServer, RequestRecord
from runtime.store import TurnStore
from runtime.tools.aftercare import window_caps
from runtime.turn.driver import Decision, ToolCallRequest, TurnRequest
from runtime.turn.events import Trimmed
from runtime.turn.open import open_session
from runtime.turn.prompt import render_row
from runtime.turn.recorder import TurnRecorder
from runtime.window.plan import RowStat, WindowCaps, plan_trim
from runtime.window.rows import Row, estimate_tokens

# Billed input-token equivalents: a cache read costs 0.1 of an input token, a 5-minute cache
# write 1.25 and a one-hour write 2.0 (DESIGN.md section 5).
READ_WEIGHT = 0.1
WRITE_WEIGHT = 1.25
WRITE_1H_WEIGHT = 2.0
Trimming = Literal["fifo", "steps"]


class GapClock:
    """Monotonic time plus the gaps skipped so far: the rehearsal model's TTLs and the
    session's choice of TTL both read it, so a 20-minute pause costs no wall time."""

    def __init__(self) -> None:
        self.skipped = 0.0

    def __call__(self) -> float:
        return time.monotonic() + self.skipped

    def advance(self, seconds: float) -> None:
        self.skipped += seconds


class AllowAll:
    """The benchmark measures tokens, not the policy: every tool call runs."""

    async def decide(self, call: ToolCallRequest) -> Decision:
        return Decision(allow=True)


@dataclass(frozen=True)
class TurnCost:
    turn: int
    requests: int
    input_tokens: int
    cache_write: int  # all writes; `cache_write_1h` of them were one-hour entries
    cache_read: int
    trimmed: bool = False
    cache_write_1h: int = 0
    records: tuple[RequestRecord, ...] = ()

    @property
    def prompt_tokens(self) -> int:
        return self.input_tokens + self.cache_write + self.cache_read

    @property
    def billed(self) -> float:
        short = self.cache_write - self.cache_write_1h
        return (
            self.input_tokens
            + WRITE_WEIGHT * short
            + WRITE_1H_WEIGHT * self.cache_write_1h
            + READ_WEIGHT * self.cache_read
        )

    @property
    def read_share(self) -> float:
        return self.cache_read / self.prompt_tokens if self.prompt_tokens else 0.0


def turn_cost(
    server: RehearsalServer, panel: str, since: int, turn: int, trimmed: bool
) -> TurnCost:
    """One turn's usage: the panel's requests from index `since` on."""
    records = tuple(r for r in server.requests(panel)[since:] if r.source != "structured-default")
    usages = [r.usage for r in records if r.usage is not None]
    return TurnCost(
        turn,
        len(records),
        sum(u.input_tokens for u in usages),
        sum(u.cache_creation_input_tokens for u in usages),
        sum(u.cache_read_input_tokens for u in usages),
        trimmed,
        sum(u.ephemeral_1h_input_tokens for u in usages),
        records,
    )


def make_instance(home: Path, name: str, role_doc: Path, config: InstanceConfig) -> None:
    paths = InstancePaths.for_name(name, home)
    paths.root.mkdir(parents=True)
    save_config(paths.config, config.model_copy(update={"role_doc_path": str(role_doc)}))
    TurnStore.open(paths.turns).close()


async def run_ours(
    *,
    server: RehearsalServer,
    panel: str,
    env: dict[str, str],
    home: Path,
    workspace: Path,
    inputs: list[str],
    on_turn: Callable[[TurnCost], None],
    clock: GapClock,
    gap: float,
) -> None:
    """Run every input as a turn of a real session on the instance `ours` under `home`,
    `gap` seconds of `clock` apart."""
    driver = ClaudeDriver(env=env)
    async with open_session(
        "ours", driver=driver, approver=AllowAll(), home=home, cwd=workspace, clock=clock
    ) as session:
        for turn, text in enumerate(inputs, 1):
            if turn > 1:
                clock.advance(gap)
            since = len(server.requests(panel))
            trimmed = False
            async for event in session.turn(text):
                trimmed = trimmed or isinstance(event, Trimmed)
            on_turn(turn_cost(server, panel, since, turn, trimmed))


@dataclass
class FlatWindow:
    """A flattened window: rows in order, trimmed FIFO (the original: the oldest row goes
    whenever a cap is passed) or in steps (ours: `runtime.window.plan.plan_trim`)."""

    caps: WindowCaps
    trimming: Trimming
    rows: list[Row]

    def add(self, row: Row) -> None:
        self.rows.append(row)

    def trim(self) -> bool:
        if self.trimming == "steps":
            plan = plan_trim([RowStat.of(r) for r in self.rows], self.caps)
            gone = set(plan.evict_ids)
            self.rows = [r for r in self.rows if r.id not in gone]
            return plan.needed
        dropped = False
        while (
            len(self.rows) > self.caps.max_rows
            or sum(r.tokens for r in self.rows) > self.caps.max_tokens
        ):
            self.rows.pop(0)
            dropped = True
        return dropped

    def flattened(self, input_text: str) -> str:
        parts = [text for row in self.rows if (text := render_row(row)) is not None]
        return "\n\n".join([*parts, input_text])


async def run_flat(
    *,
    server: RehearsalServer,
    panel: str,
    env: dict[str, str],
    home: Path,
    instance: str,
    config: InstanceConfig,
    workspace: Path,
    inputs: Sequence[str],
    on_turn: Callable[[TurnCost], None],
    trimming: Trimming,
    clock: GapClock,
    gap: float,
) -> None:
    """Run every input through the same CLI with the flattened layout, on `instance` under
    `home` (its store stays empty: only its role doc and tools are used)."""
    driver = ClaudeDriver(env=env)
    window = FlatWindow(window_caps(config), trimming, [])
    async with open_session(
        instance, driver=driver, approver=AllowAll(), home=home, cwd=workspace
    ) as session:
        role_doc, tools = session.role.read().text, session.tools
    next_id = 1
    for turn, text in enumerate(inputs, 1):
        if turn > 1:
            clock.advance(gap)
        since = len(server.requests(panel))
        request = TurnRequest(
            system=role_doc,
            blocks=({"type": "text", "text": window.flattened(text)},),
            model=config.model,
            approver=AllowAll(),
            cwd=workspace,
            sdk_tools=tools,
            bash_timeout_seconds=config.bash_timeout_seconds,
        )
        recorder = TurnRecorder(result_cap=config.tool_result_max_chars)
        async for event in driver.run_turn(request):
            recorder.add(event)
        user = ({"type": "text", "text": text},)
        reply = recorder.final_blocks()
        window.add(Row(next_id, "", "user", user, estimate_tokens(text)))
        window.add(Row(next_id + 1, "", "assistant", reply, estimate_tokens(json.dumps(reply))))
        next_id += 2
        on_turn(turn_cost(server, panel, since, turn, window.trim()))
