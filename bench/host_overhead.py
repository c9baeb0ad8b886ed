"""Host overhead per turn without the model: the real `Session` turn path, by window size.

For each window size (`--rows`, default 500, 2,000 and 8,000 rows of text, tool_use and
tool_result blocks, about 108 tokens a row) a fresh instance is seeded in one bulk insert and
a real session (`runtime.turn.open.open_session`) runs `--turns` turns against a driver
that answers at once: every third reply reads a file through a tool call. Each measured turn
is the whole `Session.turn`: role doc, input row stored, window read and prompt assembled, the reply
committed, spend saved, post-turn care and the trim (the caps sit 20 rows above the seed and the
window drops to 95% of them, so trims come as they do in a long session). Nothing else runs.

The session's first turn is timed apart (printed as "first turn"): it decodes and renders the
whole window once, which every later turn reuses; the percentiles are over the `--turns` turns
after it.

The sizes run side by side: all sessions open at once, one turn of each in turn, so load
from elsewhere falls on every size alike. The working directory is outside git, where the
sentinel's world probe starts no process; `--in-repo` makes it a git repository, to show what
the probe's git commands add to a turn that makes a tool call.

Targets (issue 12): p99 at 2,000 rows < 10 ms, and p99 at 8,000 rows no more than 1.5x p99 at
500 rows, measured in the same run.

    .venv/bin/python bench/host_overhead.py [--rows 500,2000,8000] [--turns 300] [--no-git]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from collections.abc import AsyncGenerator
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from runtime.instance.config import InstanceConfig, save_config
from runtime.instance.home import InstancePaths
from runtime.store import TurnStore
from runtime.turn.driver import (
    Decision,
    Done,
    DriverEvent,
    TextDelta,
    ToolCall,
    ToolCallRequest,
    ToolResult,
    TurnRequest,
    Usage,
)
from runtime.turn.events import Trimmed, TurnCommitted
from runtime.turn.open import open_session
from runtime.turn.session import Session
from runtime.window.rows import NewRow, estimate_tokens

HEADROOM_ROWS = 20
LOW_WATER = 0.95


def filler(i: int) -> tuple[dict[str, object], ...]:
    body = f"line {i}: " + "lorem ipsum dolor sit amet " * 6
    if i % 3 == 0:
        return (
            {"type": "text", "text": body},
            {
                "type": "tool_use",
                "id": f"t{i}",
                "name": "Read",
                "input": {"file_path": f"/src/m{i}.py"},
            },
            {"type": "tool_result", "tool_use_id": f"t{i}", "content": body, "is_error": False},
        )
    return ({"type": "text", "text": body * 2},)


class AllowAll:
    async def decide(self, call: ToolCallRequest) -> Decision:
        return Decision(allow=True)


class InstantDriver:
    """Answers every turn at once, as a model would in shape: text, sometimes a Read, usage."""

    def __init__(self) -> None:
        self.turns = 0

    async def run_turn(self, request: TurnRequest) -> AsyncGenerator[DriverEvent, None]:
        self.turns += 1
        n = self.turns
        body = f"reply {n}: " + "lorem ipsum dolor sit amet " * 6
        yield TextDelta(body)
        if n % 3 == 0:
            call = ToolCallRequest(f"r{n}", "Read", {"file_path": f"/src/m{n}.py"})
            decision = await request.approver.decide(call)  # as a live driver asks
            yield ToolCall(call.tool_use_id, call.name, call.input)
            yield ToolResult(call.tool_use_id, body if decision.allow else decision.message)
        yield Usage(input_tokens=50, output_tokens=estimate_tokens(body))
        yield Done()


@dataclass(frozen=True)
class Figures:
    rows: int
    tokens: int
    first_ms: float
    times_ms: list[float]
    trim_ms: list[float]  # the turns that trimmed the window (also in times_ms)

    def pct(self, q: float) -> float:
        ordered = sorted(self.times_ms)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def seed_instance(home: Path, rows: int) -> tuple[str, int]:
    """A fresh instance holding `rows` rows (one bulk insert) and five slots."""
    name = f"bench{rows}"
    paths = InstancePaths.for_name(name, home)
    paths.root.mkdir(parents=True)
    paths.role.write_text("ROLE " * 400, encoding="utf-8")
    seed = []
    for i in range(rows):
        blocks = filler(i)
        role: Any = "user" if i % 2 else "assistant"
        seed.append(NewRow(role, blocks, estimate_tokens(json.dumps(blocks))))
    with TurnStore.open(paths.turns) as store:
        store.append(seed)
        for n in range(5):
            store.upsert_slot(f"slot{n}", "system", f"value {n}")
        total = sum(r.tokens for r in store.rows())
    config = InstanceConfig(
        role_doc_path=str(paths.role),
        max_window_turns=rows + HEADROOM_ROWS,
        max_window_tokens=total + 4_000,
        window_low_water=LOW_WATER,
    )
    save_config(paths.config, config)
    return name, total


@dataclass
class Sized:
    """One window size's session and what its turns took."""

    rows: int
    tokens: int
    session: Session
    times: list[float] = field(default_factory=list)
    trim_ms: list[float] = field(default_factory=list)

    async def turn(self, n: int) -> None:
        started = time.perf_counter()
        events = [e async for e in self.session.turn(f"turn {n}")]
        took = (time.perf_counter() - started) * 1000
        self.times.append(took)
        assert any(isinstance(e, TurnCommitted) for e in events), f"turn {n}: {events[-1]!r}"
        if n > 0 and any(isinstance(e, Trimmed) for e in events):
            self.trim_ms.append(took)

    def figures(self) -> Figures:
        return Figures(self.rows, self.tokens, self.times[0], self.times[1:], self.trim_ms)


async def measure(home: Path, sizes: list[int], turns: int, in_repo: bool) -> list[Figures]:
    """Every size's session open at once, their turns interleaved (one turn of each size in
    turn), so that whatever else the machine does falls on all sizes alike."""
    work = home / "work"
    work.mkdir()
    if in_repo:
        await anyio.run_process(["git", "init", "-q", str(work)])
    async with AsyncExitStack() as stack:
        sized = []
        for rows in sizes:
            name, total = seed_instance(home, rows)
            session = await stack.enter_async_context(
                open_session(name, driver=InstantDriver(), approver=AllowAll(), home=home, cwd=work)
            )
            sized.append(Sized(rows, total, session))
        for n in range(turns + 1):
            for one in sized:
                await one.turn(n)
    return [one.figures() for one in sized]


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f} {five:.2f} {fifteen:.2f}"


def verdict(ok: bool) -> str:
    return "met" if ok else "MISSED"


async def run(sizes: list[int], turns: int, in_repo: bool) -> None:
    where = "a git repository" if in_repo else "a directory outside git"
    print(f"host overhead per turn (real Session, instant driver, cwd {where}); load: {load()}")
    with tempfile.TemporaryDirectory() as tmp:
        found = await measure(Path(tmp), sizes, turns, in_repo)
    results = {fig.rows: fig for fig in found}
    for fig in found:
        rows = fig.rows
        mean = statistics.mean(fig.times_ms)
        print(
            f"{rows:>6} rows (~{fig.tokens} tokens), {turns} turns: "
            f"p50 {fig.pct(0.50):.2f}  p90 {fig.pct(0.90):.2f}  p99 {fig.pct(0.99):.2f}  "
            f"max {max(fig.times_ms):.2f}  mean {mean:.2f} ms; {len(fig.trim_ms)} trim turns, "
            f"max {max(fig.trim_ms, default=0):.1f} ms; first turn {fig.first_ms:.1f} ms "
            f"(load {load()})"
        )
    if 2000 in results:
        p99 = results[2000].pct(0.99)
        print(f"p99 at 2000 rows < 10 ms: {p99:.2f} ms: {verdict(p99 < 10)}")
    if 500 in results and 8000 in results:
        ratio = results[8000].pct(0.99) / results[500].pct(0.99)
        print(f"p99(8000) / p99(500) <= 1.5: {ratio:.2f}: {verdict(ratio <= 1.5)}")
    print(f"load after: {load()}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--turns", type=int, default=600)
    ap.add_argument("--rows", default="500,2000,8000", help="window sizes, comma-separated")
    ap.add_argument(
        "--in-repo", action="store_true", help="work in a git repository (the sentinel runs git)"
    )
    args = ap.parse_args()
    try:
        sizes = [int(part) for part in args.rows.split(",") if part.strip()]
    except ValueError:
        ap.error("--rows takes whole numbers separated by commas")
    if args.turns < 100 or not sizes or min(sizes) < 1:
        ap.error("--turns must be >= 100 and every size >= 1")
    anyio.run(run, sizes, args.turns, args.in_repo)


if __name__ == "__main__":
    main()
