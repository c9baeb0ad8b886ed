"""Plays a host into a host.sqlite for bench/dashboard.py: the writer side of the dashboard bench.

It writes what a host writes, with the real schema and functions (`panels.hostdb`:
`connect`, `set_meta`, `upsert_panels`, `append_events`), in a process of its own so it
never shares the GIL with the dashboard it feeds. Two plays:

- `stream`: every panel streams at full speed for N seconds: a `Said` of 40-200 characters
  every 10-25 ms, now and then a tool call answered 50-300 ms later, a `TurnEnded` every few
  calls; one transaction every 10-50 ms holds what all panels said since the last, and the
  status rows are rewritten (their own transaction) when a panel's turn count changed, as
  panels/host/control/eventlog.py does. That is a harder load than a real host gives: the host
  coalesces text into a `Said` every 0.25 s at most (panels/host/control/coalesce.py), so a real
  panel writes about 4 of them a second, not 40-100.
- `fill`: one panel's transcript gets exactly `lines` logical lines as fast as SQLite takes
  them: blocks of a 99-line `Said` (a model printing a file), a tool call and its result
  (one line, the result folds into it), 20 events a transaction.

The wall time right after each COMMIT is kept by event id and written as JSON at the end
(`--out`): the dashboard side turns it into the commit-to-screen latency.

    .venv/bin/python bench/dashboard_play.py --hostdb H --play stream --panels 8 --out F
"""

from __future__ import annotations

import argparse
import json
import random
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from panels.hostdb import HostEvent, PanelRow, append_events, connect, set_meta, upsert_panels
from panels.hostdb.catalogue import Said, ToolAnswered, ToolCalled, TurnEnded

WORDS = ("the", "panel", "reads", "a", "file", "and", "writes", "tests", "for", "its", "change",
         "queue", "lease", "bus", "window", "tokens", "budget", "halt", "watchdog", "reply",
         "diff", "commit", "schema", "sqlite", "event", "cursor", "worker", "layout", "grid",
         "Ünïcødé", "naïve", "→", "✓", "`code`", "[not markup]", "x=1;")  # fmt: skip
ROWS_PER_SAID = 99  # fill: lines of one Said; with its tool call, a block is 100 lines
FILL_EVENTS_PER_COMMIT = 20


def panel_names(count: int) -> list[str]:
    return [f"p{i:02d}" for i in range(count)]


def make_hostdb(path: Path, panels: Sequence[str], *, backlog: int = 0, seed: int = 1) -> None:
    """A host.sqlite with these panels running, each with `backlog` events already written
    (a few replies and turn ends: what a viewer that attaches late finds)."""
    rng = random.Random(seed)
    conn = connect(path)
    try:
        set_meta(conn, {"team": "bench", "pid": "0"})
        upsert_panels(conn, [status(name, turns=0) for name in panels])
        for name in panels:
            old: list[HostEvent] = [Said(panel=name, text=prose(rng, 40, 400, newline=0.1))
                                    for _ in range(backlog)]  # fmt: skip
            if backlog:
                old.append(
                    TurnEnded(
                        panel=name,
                        turn=1,
                        outcome="done",
                        error=None,
                        tool_calls=0,
                        input_tokens=1,
                        output_tokens=1,
                        usd=0.0,
                    )
                )
            append_events(conn, [(time.time(), e) for e in old])
    finally:
        conn.close()


def status(name: str, *, turns: int) -> PanelRow:
    return PanelRow(name=name, kind="engineer", state="running", turns=turns, model="sonnet",
                    updated_ts=time.time(), window_tokens=1_000 * turns,
                    token_cap=200_000, epoch=1)  # fmt: skip


def prose(rng: random.Random, low: int, high: int, *, newline: float = 0.0) -> str:
    """Words up to a length in [low, high], a newline after a word with chance `newline`."""
    size = rng.randint(low, high)
    out: list[str] = []
    used = 0
    while used < size:
        word = rng.choice(WORDS)
        end = "\n" if rng.random() < newline else " "
        out.append(word + end)
        used += len(word) + 1
    return "".join(out)[:size]


@dataclass
class Player:
    """One panel's turn in progress: what it says next, and when."""

    name: str
    rng: random.Random
    due: float  # the next Said, on the monotonic clock
    turn: int = 1
    said: int = 0  # Saids since the last tool call
    rounds: int = 0  # tool calls in this turn
    calls: int = 0
    call: str | None = None  # the open tool call
    answer_due: float = 0.0

    def events(self, now: float) -> list[HostEvent]:
        """What the panel emits by `now`."""
        rng, out = self.rng, list[HostEvent]()
        if self.call is not None:
            if now < self.answer_due:
                return out
            out.append(ToolAnswered(panel=self.name, id=self.call, error=rng.random() < 0.1,
                                    content=prose(rng, 10, 400, newline=0.1)))  # fmt: skip
            self.call, self.rounds, self.due = None, self.rounds + 1, now
            if self.rounds >= rng.randint(2, 5):
                out.append(TurnEnded(panel=self.name, turn=self.turn, outcome="done", error=None,
                                     tool_calls=self.rounds, input_tokens=12_000,
                                     output_tokens=800, usd=0.0123))  # fmt: skip
                self.turn, self.rounds = self.turn + 1, 0
        while now >= self.due and self.call is None:
            out.append(Said(panel=self.name, text=prose(rng, 40, 200, newline=0.04)))
            self.due += rng.uniform(0.010, 0.025)
            self.said += 1
            if self.said >= rng.randint(20, 60):
                self.calls += 1
                self.call, self.said = f"{self.name}-t{self.calls}", 0
                out.append(ToolCalled(panel=self.name, id=self.call, tool="Bash",
                                      input=prose(rng, 10, 80)))  # fmt: skip
                self.answer_due = now + rng.uniform(0.05, 0.3)
        return out


def stream(path: Path, panels: Sequence[str], seconds: float, seed: int) -> dict[str, object]:
    rng = random.Random(seed)
    conn = connect(path)
    start = time.monotonic()
    players = [Player(n, random.Random(rng.random()), start + rng.uniform(0, 0.02))
               for n in panels]  # fmt: skip
    rows = {n: status(n, turns=0) for n in panels}
    commits: dict[int, float] = {}
    chars = 0
    try:
        while (now := time.monotonic()) < start + seconds:
            batch = [(time.time(), e) for p in players for e in p.events(now)]
            if batch:
                ids = append_events(conn, batch)
                done = time.time()  # right after COMMIT
                commits.update(dict.fromkeys(ids, done))
                chars += sum(len(e.text) for _, e in batch if isinstance(e, Said))
            changed = [replace(rows[p.name], turns=p.turn - 1, updated_ts=time.time())
                       for p in players if rows[p.name].turns != p.turn - 1]  # fmt: skip
            if changed:
                upsert_panels(conn, changed)
                rows.update((r.name, r) for r in changed)
            time.sleep(rng.uniform(0.010, 0.050))
        wall = time.monotonic() - start
    finally:
        conn.close()
    return {"commits": commits, "chars": chars, "wall": wall}


def fill(path: Path, panel: str, lines: int, seed: int) -> dict[str, object]:
    """Exactly `lines` logical lines into `panel`'s transcript (see the module docstring)."""
    rng = random.Random(seed)
    events: list[HostEvent] = []
    left, block = lines, 0
    while left > 0:
        rows = min(ROWS_PER_SAID, left)
        # Rows of 20-300 characters: some wrap at the pane's width, as real output does.
        text = "\n".join(prose(rng, 20, 300).replace("\n", " ") for _ in range(rows))
        events.append(Said(panel=panel, text=text))
        left -= rows
        if left > 0:
            block += 1
            call = f"fill-{block}"
            events.append(ToolCalled(panel=panel, id=call, tool="Read", input=f"src/m{block}.py"))
            events.append(ToolAnswered(panel=panel, id=call, error=False, content="ok\n2\n3"))
            left -= 1
    conn = connect(path)
    first, last = 0.0, 0
    start = time.monotonic()
    try:
        for i in range(0, len(events), FILL_EVENTS_PER_COMMIT):
            chunk = events[i : i + FILL_EVENTS_PER_COMMIT]
            last = append_events(conn, [(time.time(), e) for e in chunk])[-1]
            first = first or time.time()
    finally:
        conn.close()
    return {"first_commit": first, "last_id": last, "events": len(events),
            "wall": time.monotonic() - start}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description="Write a host's events into a host.sqlite.")
    parser.add_argument("--hostdb", type=Path, required=True, help="the host.sqlite to write")
    parser.add_argument("--play", choices=("stream", "fill"), required=True, help="what to write")
    parser.add_argument("--panels", type=int, default=8, help="stream: panels p00.. to feed")
    parser.add_argument("--seconds", type=float, default=20.0, help="stream: for how long")
    parser.add_argument("--lines", type=int, default=100_000, help="fill: transcript lines")
    parser.add_argument("--seed", type=int, default=1, help="seed of the random text")
    parser.add_argument("--out", type=Path, required=True, help="JSON of the figures, at the end")
    args = parser.parse_args()
    if args.play == "stream":
        result = stream(args.hostdb, panel_names(args.panels), args.seconds, args.seed)
    else:
        result = fill(args.hostdb, panel_names(1)[0], args.lines, args.seed)
    part = args.out.with_suffix(".part")
    part.write_text(json.dumps(result))
    part.rename(args.out)


if __name__ == "__main__":
    main()
