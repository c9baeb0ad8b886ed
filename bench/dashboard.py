"""The dashboard's speed and cost: lag while 8 panels stream, idle CPU, a 100,000-line scroll,
and the time from an event's commit to its paint. Targets from issue 10.

    .venv/bin/python bench/dashboard.py [--seconds 20] [--idle-seconds 15] [--panels 8]
        [--lines 100000] [--steps 200] [--tmux] [--quick] [--seed 1]

Each phase runs the real dashboard (`DashboardApp`, 200x50) in a fresh process on a fresh
host.sqlite (real schema, written with `panels.hostdb`), probed by dashboard_app.py; the
host is played by dashboard_play.py in a third process, so the writer never holds the
dashboard's GIL:

- idle: `--panels` panes with a short backlog each, nothing new, for `--idle-seconds`:
  process CPU time (every thread: the tail's aiosqlite thread, the driver's writer) over
  wall time. Then, apart, 3 s of the lag probes at rest: the baseline the stream's lag
  compares with, measured in the same run.
- stream: every panel streams at full speed for `--seconds` (dashboard_play.py says how
  hard: harder than a real host). Figures: the event loop's lag (a 10 ms sleep, how late it
  wakes), the app's message queue delay (what a key press waits), and for every event
  written, its commit (wall time right after COMMIT, kept by the writer) to the first paint
  after its pane's transcript took it. The tail's 50 ms poll is part of that latency.
- scroll: one pane's transcript gets `--lines` lines through the real path (events in the
  log -> tail -> `entries` -> `Transcript.add`; blocks of a 99-line `Said` and a tool call),
  timed from the writer's first commit to the paint after the last event; the RSS after.
  Then `--steps` scroll steps (page up/down, home, end, a jump), each a `scroll_to(...,
  animate=False, immediate=True)` timed to the next paint. No step may freeze the screen:
  the target is max < 100 ms (a pause a person notices), ours, the issue names none.

Headless (the default) runs Textual's real compositor on every frame and, in the probe,
also encodes each update into the bytes a terminal would get; only the write to a terminal
is missing. `--tmux` runs each phase in a real terminal instead (a 200x50 tmux window on a
private tmux server), so the terminal writes count too; the tmux server's own CPU is not
counted (it is the terminal, not the dashboard).

Every figure line ends with the load average when it was measured. Figures are re-measured
on 2-core machines up to 2.3x slower, so a PASS says whether the figure leaves that much
headroom under its target. The exit status is 1 when a phase failed (error, timeout, an
event never shown); a MISS is a figure, not a failure.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from dashboard_play import make_hostdb, panel_names

ROOT = Path(__file__).resolve().parents[1]
APP = Path(__file__).with_name("dashboard_app.py")
HEADROOM = 2.3  # the slowest re-measure so far, against these figures
TMUX = "/usr/bin/tmux"


def verdict(value: float, target: float) -> str:
    if not value <= target:
        return "MISS"
    room = target / value if value > 0 else float("inf")
    if room >= HEADROOM:
        return f"PASS (x{room:.1f} headroom, x{HEADROOM} wanted)"
    return f"PASS but headroom only x{room:.1f} (x{HEADROOM} wanted)"


def load_text(load: list[float]) -> str:
    return f"load {' '.join(f'{x:.2f}' for x in load)} ({os.cpu_count()} cores)"


def ms(s: dict[str, float], *keys: str) -> str:
    return ", ".join(f"{k} {s[k]:.1f} ms" for k in keys)


def run_phase(
    phase: str, options: list[str], scratch: Path, *, tmux: bool, deadline: float
) -> dict[str, Any]:
    """Run dashboard_app.py for one phase (headless, or in a tmux window); its JSON. A phase
    still running after `deadline` seconds dumps its stacks and ends (dashboard_app.py)."""
    out = scratch / f"{phase}.json"
    command = [sys.executable, str(APP), "--phase", phase, "--out", str(out),
               "--hostdb", str(scratch / "host.sqlite"), "--deadline", str(deadline),
               *options]  # fmt: skip
    if not tmux:
        done = subprocess.run(command, cwd=ROOT, stdin=subprocess.DEVNULL, capture_output=True,
                              text=True, timeout=deadline + 30)  # fmt: skip
        if not out.exists():
            return {"error": f"exit {done.returncode}: {done.stderr[-4000:]}"}
        result: dict[str, Any] = json.loads(out.read_text())
        return result
    server = [TMUX, "-L", f"dashboard-bench-{os.getpid()}", "-f", "/dev/null"]
    subprocess.run([*server, "new-session", "-d", "-x", "200", "-y", "50", "-c", str(ROOT),
                    shlex.join([*command, "--terminal"])], check=True)  # fmt: skip
    try:
        until = time.monotonic() + deadline + 30
        while not out.exists() and time.monotonic() < until:
            if subprocess.run([*server, "has-session"], capture_output=True).returncode:
                break  # the session ended without figures
            time.sleep(0.2)
        while time.monotonic() < until:  # let the app quit before the next phase
            if subprocess.run([*server, "has-session"], capture_output=True).returncode:
                break
            time.sleep(0.1)
    finally:
        subprocess.run([*server, "kill-server"], capture_output=True)
    if not out.exists():
        return {"error": "no figures from the tmux window (did the app start?)"}
    result = json.loads(out.read_text())
    return result


def report_idle(r: dict[str, Any], panels: int) -> None:
    print(f"idle CPU ({panels} quiet panels, {r['wall']:.0f} s, {r['paints']} paints): "
          f"{r['cpu_pct']:.2f}% of one core ({1000 * r['cpu_s']:.0f} ms); target < 2%: "
          f"{verdict(r['cpu_pct'], 2.0)}; RSS {r['rss_mb']:.0f} MB; "
          f"{load_text(r['load_cpu'])}")  # fmt: skip
    print(f"lag at rest (baseline, {r['loop_lag']['n']} ticks): loop "
          f"{ms(r['loop_lag'], 'p50', 'p99', 'max')}; message queue "
          f"{ms(r['queue_lag'], 'p50', 'p99', 'max')}; {load_text(r['load'])}")  # fmt: skip


def report_stream(r: dict[str, Any], panels: int, rest: dict[str, Any] | None) -> None:
    rate = r["events"] / r["play_wall"]
    chars = r["chars"] / r["play_wall"]
    print(f"stream ({panels} panels, {r['play_wall']:.0f} s, {rate:.0f} events/s, "
          f"{chars / 1000:.0f}k chars/s, {r['paints']} paints, dashboard CPU "
          f"{r['cpu_pct']:.0f}% of one core)")  # fmt: skip
    loop, queue = r["loop_lag"], r["queue_lag"]
    ratio = ""
    if rest is not None and rest["loop_lag"]["p99"] > 0:
        ratio = f" (x{loop['p99'] / rest['loop_lag']['p99']:.1f} the p99 at rest)"
    print(f"stream UI event loop lag ({loop['n']} ticks): {ms(loop, 'p50', 'p99', 'max')}"
          f"{ratio}; target p99 < 50 ms: {verdict(loop['p99'], 50.0)}; "
          f"{load_text(r['load'])}")  # fmt: skip
    print(
        f"stream message queue delay ({queue['n']} posts): {ms(queue, 'p50', 'p99', 'max')};"
        f" target p99 < 50 ms: {verdict(queue['p99'], 50.0)}; {load_text(r['load'])}"
    )
    paint = r["paint"]
    print(f"stream paint cost ({paint['n']} paints): {ms(paint, 'p50', 'p99', 'max')}; "
          f"full GC pauses: {r['gc']['n']}, max {r['gc']['max']:.0f} ms; "
          f"{load_text(r['load'])}")  # fmt: skip
    lat = r["latency"]
    print(f"commit -> screen latency ({lat['n']} events, {r['missing']} never shown): "
          f"{ms(lat, 'p50', 'p95', 'max')}; target p95 < 100 ms: {verdict(lat['p95'], 100.0)};"
          f" {load_text(r['load'])}")  # fmt: skip


def report_scroll(r: dict[str, Any]) -> None:
    grown = r["rss_mb"] - r["rss_before_mb"]
    print(f"scroll load: {r['lines']:,} lines ({r['rows']:,} rows at the pane's width) on "
          f"screen {r['load_s']:.2f} s after the first commit (writer {r['play_wall']:.2f} s); "
          f"longest loop stall while loading {r['load_lag']['max']:.0f} ms; RSS "
          f"{r['rss_mb']:.0f} MB after loading (+{grown:.0f} MB); "
          f"{load_text(r['load'])}")  # fmt: skip
    s = r["steps"]
    kinds = "; ".join(f"{k} p50 {v['p50']:.1f}/max {v['max']:.1f}" for k, v in r["by_kind"].items())
    print(f"scroll steps ({s['n']}, to the next paint): {ms(s, 'p50', 'p99', 'max')} "
          f"({kinds}); paint cost p99 {r['paint']['p99']:.1f} ms; full GC pauses while "
          f"scrolling: {r['gc']['n']}, max {r['gc']['max']:.0f} ms; target max < 100 ms: "
          f"{verdict(s['max'], 100.0)}; {load_text(r['load'])}")  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(
        description="Measure the dashboard: lag while panels stream, idle CPU, a long "
        "transcript's scroll, and commit-to-screen latency."
    )
    parser.add_argument("--seconds", type=float,
                        help="how long the panels stream (default 20, quick 3)")  # fmt: skip
    parser.add_argument("--idle-seconds", type=float,
                        help="how long idle CPU is measured (default 15, quick 3)")  # fmt: skip
    parser.add_argument("--panels", type=int, default=8,
                        help="panels streaming, and idle (default 8)")  # fmt: skip
    parser.add_argument("--lines", type=int, default=100_000,
                        help="lines of the scrolled transcript (default 100000)")  # fmt: skip
    parser.add_argument("--steps", type=int, default=200, help="scroll steps (default 200)")
    parser.add_argument(
        "--tmux",
        action="store_true",
        help="run the dashboard in a real 200x50 terminal (tmux), not headless",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="a small run (a few seconds a phase, 5,000 lines): a smoke test",
    )
    parser.add_argument("--gc-freeze", action="store_true",
                        help="gc.freeze() in the dashboard once its panes are up: compare the "
                        "lag and paint figures with and without")  # fmt: skip
    parser.add_argument("--seed", type=int, default=1, help="seed of the text and the steps")
    args = parser.parse_args()
    # --quick shortens what is not given: a smoke test can shorten the phases further.
    if args.seconds is None:
        args.seconds = 3.0 if args.quick else 20.0
    if args.idle_seconds is None:
        args.idle_seconds = 3.0 if args.quick else 15.0
    if args.quick:
        args.lines, args.steps = 5_000, 30
    if args.tmux and not Path(TMUX).exists():
        print(f"--tmux needs tmux at {TMUX}; install it or run headless", file=sys.stderr)
        return 2
    mode = "tmux 200x50 terminal" if args.tmux else "headless 200x50, updates encoded"
    mode += "; gc.freeze() after start-up" if args.gc_freeze else ""
    print(f"dashboard bench: {mode}; {load_text(list(os.getloadavg()))}")
    seed = ["--seed", str(args.seed), *(["--gc-freeze"] if args.gc_freeze else [])]
    settle, rest = ("1", "1") if args.quick else ("2", "3")
    phases: list[tuple[str, int, int, list[str]]] = [
        ("idle", args.panels, 20, ["--seconds", str(args.idle_seconds), "--settle", settle,
                                   "--lag-seconds", rest]),
        ("stream", args.panels, 0, ["--seconds", str(args.seconds)]),
        ("scroll", 1, 0, ["--lines", str(args.lines), "--steps", str(args.steps)]),
    ]  # fmt: skip
    failed = False
    results: dict[str, dict[str, Any]] = {}
    for phase, panels, backlog, options in phases:
        scratch = Path(tempfile.mkdtemp(prefix=f"dash-bench-{phase}-"))
        try:
            make_hostdb(scratch / "host.sqlite", panel_names(panels), backlog=backlog)
            # Generous: a phase takes its seconds plus a few; the scroll about 1 s per 10k lines.
            deadline = 120 + 2 * (args.seconds + args.idle_seconds) + args.lines / 200
            result = run_phase(phase, [*options, *seed, "--panels", str(panels)], scratch,
                               tmux=args.tmux, deadline=deadline)  # fmt: skip
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        results[phase] = result
        if "error" in result:
            failed = True
            print(f"{phase}: FAILED: {result['error']}")
            print(result.get("trace", ""), file=sys.stderr)
        elif phase == "idle":
            report_idle(result, panels)
        elif phase == "stream":
            report_stream(result, panels, results.get("idle"))
            if result["missing"] or result["empty_panes"]:
                failed = True
                print(f"stream: FAILED: {result['missing']} events never shown; "
                      f"panes with no lines: {result['empty_panes']}")  # fmt: skip
        else:
            report_scroll(result)
            # Past its cap the transcript drops its oldest lines, a block at a time.
            cap = result["cap"]
            whole = result["lines"] == args.lines if args.lines <= cap else result["lines"] <= cap
            if result["wrong_offset"] or not whole:
                failed = True
                print(f"scroll: FAILED: {result['lines']} lines of {args.lines} (cap {cap}); "
                      f"{result['wrong_offset']} steps ended elsewhere")  # fmt: skip
        sys.stdout.flush()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
