"""The two prompt layouts the cost benchmark compares, each run through the real CLI.

- ours: the real thing. `open_session` + `ClaudeDriver`; the prompt is `runtime.prompt`'s
  head block, one block per stored row with our cache marker on the last, then the tail; the
  window is trimmed in steps (`runtime.window`).
- baseline: the original mnemara's layout. The whole window flattened into one text block
  with the new input at its end, no cache marker of ours, and FIFO trimming every turn (the
  oldest rows go as soon as a cap is passed). It is sent through the same `ClaudeDriver`, so
  the CLI adds exactly what it adds to ours, and it offers the model the same tools (taken
  from a session opened on a second instance), so the tool list weighs the same in both.

Both record each turn's requests from the rehearsal server's own accounting.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from runtime.claude import ClaudeDriver
from runtime.config import InstanceConfig, save_config
from runtime.driver import Decision, ToolCallRequest, TurnRequest
from runtime.home import InstancePaths
from runtime.prompt import render_row
from runtime.recorder import TurnRecorder
from runtime.rehearsal import RehearsalServer, summarize
from runtime.rows import Row, estimate_tokens
from runtime.session import Trimmed, open_session
from runtime.store import TurnStore

# Billed input-token equivalents: a cache read costs 0.1 of an input token, a 5-minute cache
# write 1.25 (DESIGN.md section 5; the CLI writes 5-minute entries unless told otherwise).
READ_WEIGHT = 0.1
WRITE_WEIGHT = 1.25


class AllowAll:
    """The benchmark measures tokens, not the policy: every tool call runs."""

    async def decide(self, call: ToolCallRequest) -> Decision:
        return Decision(allow=True)


@dataclass(frozen=True)
class TurnCost:
    turn: int
    requests: int
    input_tokens: int
    cache_write: int
    cache_read: int
    trimmed: bool = False

    @property
    def prompt_tokens(self) -> int:
        return self.input_tokens + self.cache_write + self.cache_read

    @property
    def billed(self) -> float:
        return self.input_tokens + WRITE_WEIGHT * self.cache_write + READ_WEIGHT * self.cache_read

    @property
    def read_share(self) -> float:
        return self.cache_read / self.prompt_tokens if self.prompt_tokens else 0.0


def turn_cost(
    server: RehearsalServer, panel: str, since: int, turn: int, trimmed: bool
) -> TurnCost:
    """One turn's usage: the panel's requests from index `since` on."""
    records = [r for r in server.requests(panel)[since:] if r.source != "structured-default"]
    t = summarize(records)
    return TurnCost(
        turn,
        t.requests,
        t.input_tokens,
        t.cache_creation_input_tokens,
        t.cache_read_input_tokens,
        trimmed,
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
) -> None:
    """Run every input as a turn of a real session on the instance `ours` under `home`."""
    driver = ClaudeDriver(env=env)
    async with open_session(
        "ours", driver=driver, approver=AllowAll(), home=home, cwd=workspace
    ) as session:
        for turn, text in enumerate(inputs, 1):
            since = len(server.requests(panel))
            trimmed = False
            async for event in session.turn(text):
                trimmed = trimmed or isinstance(event, Trimmed)
            on_turn(turn_cost(server, panel, since, turn, trimmed))


@dataclass
class FlatWindow:
    """The original's window: rows in order, dropped oldest-first whenever a cap is passed."""

    max_rows: int
    max_tokens: int
    rows: list[Row]

    def add(self, row: Row) -> None:
        self.rows.append(row)

    def trim(self) -> bool:
        dropped = False
        while len(self.rows) > self.max_rows or sum(r.tokens for r in self.rows) > self.max_tokens:
            self.rows.pop(0)
            dropped = True
        return dropped

    def flattened(self, input_text: str) -> str:
        parts = [text for row in self.rows if (text := render_row(row)) is not None]
        return "\n\n".join([*parts, input_text])


async def run_baseline(
    *,
    server: RehearsalServer,
    panel: str,
    env: dict[str, str],
    home: Path,
    config: InstanceConfig,
    workspace: Path,
    inputs: list[str],
    on_turn: Callable[[TurnCost], None],
) -> None:
    """Run every input through the same CLI with the original's flattened layout, on the
    instance `baseline` under `home` (its store stays empty: only its tools are used)."""
    driver = ClaudeDriver(env=env)
    window = FlatWindow(config.max_window_turns, config.max_window_tokens, [])
    async with open_session(
        "baseline", driver=driver, approver=AllowAll(), home=home, cwd=workspace
    ) as session:
        role_doc, tools = session.role.read().text, session.tools
    next_id = 1
    for turn, text in enumerate(inputs, 1):
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
