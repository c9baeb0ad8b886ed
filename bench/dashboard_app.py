"""The dashboard under measurement, for bench/dashboard.py: one phase of the bench per process.

`ProbedApp` is the real `DashboardApp` (`panels.ui.make_app`'s class: the real tail, panes,
transcripts and compositor) with probes added here, in the bench only:

- paints: `_display` (Textual's hand-over of each composed screen update to the driver) is
  wrapped to stamp the wall time of every paint; an event counts as on screen at the first
  paint after `apply` gave it to its pane's transcript (the transcript follows the end, so
  the new text is in that paint). Headless, Textual composes every update (render_line of
  each dirty widget) but skips turning it into terminal bytes; the probe does that step too
  (`render_segments`) and drops the bytes, so only the write to a terminal is missing.
  `--terminal` runs the app in the terminal it is given (bench/dashboard.py `--tmux`).
- paint cost: `Screen._compositor_refresh` (compose + hand-over) is timed per paint.
- lag: an asyncio task sleeps 10 ms again and again and keeps how late it woke (the event
  loop's lag); another posts a callback to the app's message queue every 10 ms and keeps
  how long it waited there (the delay a key press would see).

Each phase writes one JSON object to `--out` (figures and their load average, or `error`)
and quits the app. bench/dashboard.py starts this script and words the figures.
"""

from __future__ import annotations

import argparse
import asyncio
import faulthandler
import gc
import json
import os
import random
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from textual.screen import Screen

from panels.ui.app import DashboardApp
from panels.ui.tail import Changes

PLAY = Path(__file__).with_name("dashboard_play.py")
TICK = 0.010  # the lag probes' period
SIZE = (200, 50)


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def summary(values: list[float]) -> dict[str, float]:
    """Count, p50, p95, p99 and max of `values` (seconds), in milliseconds."""
    if not values:
        return {"n": 0, "p50": float("nan"), "p95": float("nan"), "p99": float("nan"),
                "max": float("nan")}  # fmt: skip
    ordered = sorted(values)

    def at(q: float) -> float:
        return 1000 * ordered[min(len(ordered) - 1, int(q * len(ordered)))]

    return {"n": len(ordered), "p50": at(0.5), "p95": at(0.95), "p99": at(0.99),
            "max": 1000 * ordered[-1]}  # fmt: skip


class ProbedApp(DashboardApp):
    """The dashboard, probed; runs `phase` once its panes are up, writes `out`, then quits."""

    def __init__(self, hostdb: Path, args: argparse.Namespace) -> None:
        super().__init__(hostdb)
        self.args = args
        self.paints = 0
        self.paint_seconds: list[float] = []
        self.shown_at: dict[int, float] = {}  # event id -> wall time of its first paint
        self._unpainted: list[int] = []
        self._paint_waiters: list[asyncio.Future[float]] = []
        self.loop_lags: list[float] = []
        self.queue_lags: list[float] = []
        self._sampling = False
        self.gc_pauses: list[float] = []  # the full (generation 2) collections
        self._gc_began = 0.0
        gc.callbacks.append(self._gc)

    # -- probes ---------------------------------------------------------------------------------

    async def apply(self, changes: Changes) -> None:
        await super().apply(changes)
        self._unpainted.extend(logged.id for logged in changes.events)

    def _display(self, screen: Screen[Any], renderable: Any) -> None:
        super()._display(screen, renderable)
        if renderable is None:
            return
        encode = getattr(renderable, "render_segments", None)  # a CompositorUpdate's
        if self.is_headless and encode is not None:
            encode(self.console)  # the bytes a terminal would get, dropped
        now = time.time()
        self.paints += 1
        for ident in self._unpainted:
            self.shown_at[ident] = now
        self._unpainted.clear()
        waiters, self._paint_waiters = self._paint_waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(now)

    def _gc(self, phase: str, info: dict[str, int]) -> None:
        if info.get("generation") != 2:
            return
        if phase == "start":
            self._gc_began = time.perf_counter()
        else:
            self.gc_pauses.append(time.perf_counter() - self._gc_began)

    async def next_paint(self, within: float = 5.0) -> float:
        """The wall time of the next paint."""
        waiter: asyncio.Future[float] = asyncio.get_running_loop().create_future()
        self._paint_waiters.append(waiter)
        return await asyncio.wait_for(waiter, within)

    async def _sample_loop(self) -> None:
        while True:
            began = time.perf_counter()
            await asyncio.sleep(TICK)
            if self._sampling:
                self.loop_lags.append(time.perf_counter() - began - TICK)

    async def _sample_queue(self) -> None:
        while True:
            self.call_later(self._dequeued, time.perf_counter())
            await asyncio.sleep(TICK)

    def _dequeued(self, posted: float) -> None:
        if self._sampling:
            self.queue_lags.append(time.perf_counter() - posted)

    def sample(self, on: bool) -> None:
        if on and not self._sampling:
            self.loop_lags, self.queue_lags = [], []
            self.run_worker(self._sample_loop(), group="probe")
            self.run_worker(self._sample_queue(), group="probe")
        elif not on:
            self.workers.cancel_group(self, "probe")
        self._sampling = on

    def lags(self) -> dict[str, dict[str, float]]:
        return {"loop_lag": summary(self.loop_lags), "queue_lag": summary(self.queue_lags)}

    # -- phases ---------------------------------------------------------------------------------

    async def on_mount(self) -> None:
        # DashboardApp.on_mount runs too (Textual calls each class's handler), after this: it
        # starts the tail, an exclusive worker that cancels the others of its group, so the
        # phase runs in a group of its own. It waits for the panes the tail makes.
        self.run_worker(self._run(), name="bench-phase", group="bench")

    async def _run(self) -> None:
        args = self.args
        try:
            await until(lambda: len(self.panes) >= args.panels, 30.0)
            if args.gc_freeze:  # what start-up made is never collected again: shorter full GCs
                gc.freeze()
            phase: Callable[[], Any] = getattr(self, f"phase_{args.phase}")
            result = await phase()
            result["load"] = os.getloadavg()
            result["rss_mb"] = result.get("rss_mb", rss_mb())
            result["size"] = [self.size.width, self.size.height]
        except Exception as exc:  # reported by bench/dashboard.py, which fails the run
            result = {"error": f"{type(exc).__name__}: {exc}", "trace": traceback.format_exc()}
        part = args.out.with_suffix(".part")
        part.write_text(json.dumps(result))
        part.rename(args.out)
        self.exit()

    async def phase_idle(self) -> dict[str, Any]:
        """CPU used attached to a quiet host; then the lag at rest (the baseline), apart."""
        args = self.args
        await asyncio.sleep(args.settle)
        paints, cpu, wall = self.paints, time.process_time(), time.monotonic()
        await asyncio.sleep(args.seconds)
        cpu, wall = time.process_time() - cpu, time.monotonic() - wall
        load = os.getloadavg()
        paints = self.paints - paints
        self.sample(True)
        await asyncio.sleep(args.lag_seconds)
        self.sample(False)
        return {"cpu_pct": 100 * cpu / wall, "cpu_s": cpu, "wall": wall, "paints": paints,
                "load_cpu": load, **self.lags()}  # fmt: skip

    async def phase_stream(self) -> dict[str, Any]:
        """Lag, and commit-to-paint latency, while the writer streams into every panel."""
        args = self.args
        out = args.out.with_name("play-stream.json")
        self.sample(True)
        cpu, wall = time.process_time(), time.monotonic()
        paints = self.paints
        await play(args.hostdb, out, "--play", "stream", "--panels", str(args.panels),
                   "--seconds", str(args.seconds), "--seed", str(args.seed))  # fmt: skip
        played = json.loads(out.read_text())
        commits = {int(k): float(v) for k, v in played["commits"].items()}
        # The writer is done; the last commits reach the screen within a poll and a paint.
        await until(lambda: all(i in self.shown_at for i in commits), 5.0, fail=False)
        cpu, wall = time.process_time() - cpu, time.monotonic() - wall
        self.sample(False)
        latency = [self.shown_at[i] - t for i, t in commits.items() if i in self.shown_at]
        lines = {name: pane.transcript.line_count for name, pane in self.panes.items()}
        return {"events": len(commits), "missing": len(commits) - len(latency),
                "chars": played["chars"], "play_wall": played["wall"],
                "cpu_pct": 100 * cpu / wall, "paints": self.paints - paints, "wall": wall,
                "paint": summary(self.paint_seconds), "latency": summary(latency),
                "empty_panes": sorted(n for n, c in lines.items() if c == 0),
                "gc": summary(self.gc_pauses),
                **self.lags()}  # fmt: skip

    async def phase_scroll(self) -> dict[str, Any]:
        """Load `lines` lines into one pane through the event log, then scroll it about."""
        args = self.args
        log = next(iter(self.panes.values())).transcript
        rss_before = rss_mb()
        out = args.out.with_name("play-fill.json")
        self.sample(True)
        await play(args.hostdb, out, "--play", "fill", "--lines", str(args.lines),
                   "--seed", str(args.seed))  # fmt: skip
        played = json.loads(out.read_text())
        last = int(played["last_id"])
        await until(lambda: last in self.shown_at, 60.0 + args.lines / 1000)
        self.sample(False)
        load_lag = summary(self.loop_lags)
        loaded = self.shown_at[last] - float(played["first_commit"])
        rss_loaded = rss_mb()
        self.paint_seconds, self.gc_pauses = [], []
        rng = random.Random(args.seed)
        steps: dict[str, list[float]] = {}
        wrong = 0
        for _ in range(args.steps):
            kind, target = step(rng, log.scroll_offset.y, log.max_scroll_y,
                                log.scrollable_content_region.height)  # fmt: skip
            began = time.perf_counter()
            log.scroll_to(y=target, animate=False, immediate=True)
            await self.next_paint()
            steps.setdefault(kind, []).append(time.perf_counter() - began)
            wrong += log.scroll_offset.y != target
        every = [s for values in steps.values() for s in values]
        return {"lines": log.line_count, "cap": log.max_lines, "rows": log.virtual_size.height,
                "load_s": loaded,
                "play_wall": played["wall"], "load_lag": load_lag, "rss_before_mb": rss_before,
                "rss_mb": rss_loaded, "steps": summary(every), "wrong_offset": wrong,
                "by_kind": {k: summary(v) for k, v in sorted(steps.items())},
                "paint": summary(self.paint_seconds), "gc": summary(self.gc_pauses)}  # fmt: skip


def step(rng: random.Random, y: int, max_y: int, page: int) -> tuple[str, int]:
    """A scroll step that moves the view: its kind and the offset it goes to."""
    while True:
        kind = rng.choice(("page_up", "page_down", "home", "end", "jump"))
        target = {"page_up": y - page, "page_down": y + page, "home": 0, "end": max_y,
                  "jump": rng.randint(0, max_y)}[kind]  # fmt: skip
        target = max(0, min(max_y, target))
        if target != y or max_y == 0:
            return kind, target


async def until(check: Callable[[], bool], within: float, *, fail: bool = True) -> None:
    deadline = time.monotonic() + within
    while not check():
        if time.monotonic() > deadline:
            if fail:
                raise TimeoutError(f"not within {within:.0f} s")
            return
        await asyncio.sleep(0.02)


async def play(hostdb: Path, out: Path, *args: str) -> None:
    """Run the writer (dashboard_play.py) in a process of its own, to its end."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, str(PLAY), "--hostdb", str(hostdb), "--out", str(out), *args,
        stdin=asyncio.subprocess.DEVNULL,
    )  # fmt: skip
    if await proc.wait() != 0 or not out.exists():  # noqa: ASYNC240 (a stat, once)
        raise RuntimeError(f"the writer failed (exit {proc.returncode})")


def time_paints() -> None:
    """Time each compositor refresh of a `ProbedApp` (this process only)."""
    original = Screen._compositor_refresh

    def timed(self: Screen[Any]) -> None:
        began = time.perf_counter()
        original(self)
        app = self.app
        if isinstance(app, ProbedApp):
            app.paint_seconds.append(time.perf_counter() - began)

    Screen._compositor_refresh = timed  # type: ignore[method-assign]


def main() -> None:
    parser = argparse.ArgumentParser(description="One phase of bench/dashboard.py.")
    parser.add_argument("--phase", choices=("idle", "stream", "scroll"), required=True,
                        help="what to measure")  # fmt: skip
    parser.add_argument("--hostdb", type=Path, required=True, help="the host.sqlite to attach")
    parser.add_argument("--out", type=Path, required=True, help="where the JSON figures go")
    parser.add_argument("--panels", type=int, default=8, help="panels in the host.sqlite")
    parser.add_argument("--seconds", type=float, default=20.0, help="idle/stream: how long")
    parser.add_argument("--settle", type=float, default=2.0, help="idle: wait before measuring")
    parser.add_argument("--lag-seconds", type=float, default=3.0, help="idle: lag baseline")
    parser.add_argument("--lines", type=int, default=100_000, help="scroll: transcript lines")
    parser.add_argument("--steps", type=int, default=200, help="scroll: scroll steps")
    parser.add_argument("--seed", type=int, default=1, help="seed of the text and the steps")
    parser.add_argument("--gc-freeze", action="store_true",
                        help="gc.freeze() once the panes are up (to compare)")  # fmt: skip
    parser.add_argument("--terminal", action="store_true",
                        help="run in this terminal (else headless, 200x50)")  # fmt: skip
    parser.add_argument("--deadline", type=float, default=600.0,
                        help="seconds until a stuck phase dumps its stacks and ends")  # fmt: skip
    args = parser.parse_args()
    # A phase that hangs (a wait that never ends) must not outlive its bench: the stacks go
    # to stderr, which bench/dashboard.py prints, and the process ends.
    faulthandler.dump_traceback_later(args.deadline, exit=True)
    time_paints()
    app = ProbedApp(args.hostdb, args)
    if args.terminal:
        app.run()
    else:
        asyncio.run(app.run_async(headless=True, size=SIZE))


if __name__ == "__main__":
    main()
