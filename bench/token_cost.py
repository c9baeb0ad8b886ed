"""Prompt-cache cost of a long coding session: our layout against two baselines and the
physical minimum, offline, with turns any distance apart.

A 100-turn scripted coding session (reads, edits, test runs; the context grows until the
window trims) runs through the real Claude Code CLI bundled with the SDK, three times, each
against its own rehearsal model (runtime/rehearsal/), which bills every request by the
prompt-cache rules from the request bytes:

- ours: `open_session` + `ClaudeDriver`, the layout of runtime/turn/prompt.py;
- original: the original's layout, the whole window as one flattened text block with FIFO
  trimming every turn (bench/cost_layouts.py);
- like-for-like: the same flattened block over the same rows, trimmed on our schedule.

The three run at once (separate servers, caches and workspaces). `--gap SECONDS` puts that
much time between turns on the rehearsal model's clock, which our session reads too (it
picks one-hour cache entries when turns come minutes apart); a gap costs no wall time.
Repeat `--gap` to measure several gaps in one run.

Printed per gap: a per-turn table of ours against like-for-like, totals, and one line per
ratio, each ending `= N.NNNx`: ours against the original's layout, against like-for-like,
and against the physical minimum (bench/cost_minimum.py: the same content with every piece
written once); then the minimum against like-for-like, the floor no layout of this content
can go below (a target under it is marked so). Billed input equivalents: input 1, reads
0.1, five-minute writes 1.25, one-hour writes 2.0. Targets: cache-read share >= 85% from
turn 10 on and <= 0.25x the original at gaps under five minutes; like-for-like <= 0.20x at
gaps under five minutes and <= 0.25x at longer ones; ours <= 1.03x the minimum.

    .venv/bin/python bench/token_cost.py [--turns 100] [--gap 2 --gap 301 --gap 1200]
        [--every 10] [--model claude-opus-4-7] [--low-water 0.6] [--ttl auto|5m|1h]
        [--cli-env KEY=VALUE ...]

The figures depend on the model id, because the CLI shapes its requests per model and the
smallest cacheable prefix differs per model. `--low-water` and `--cli-env` are there to
measure the levers (window steps, CLI switches).

No network, no key, no tokens: the CLI's HOME is a temp dir and its base URL is loopback.
Exit status 0 when every target is met, 1 otherwise.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).parent))

from cost_layouts import GapClock, TurnCost, make_instance, run_flat, run_ours
from cost_minimum import FIVE_MINUTES, minimum_turn
from cost_workload import Workload, make_workspace, task_input

from runtime.instance.config import InstanceConfig
from runtime.rehearsal import PanelScript, Script, open_rehearsal_server
from runtime.rehearsal.env import rehearsal_env
from runtime.turn.cache_ttl import TtlSetting

ROLE_DOC = Path(__file__).parent.parent / "examples" / "roles" / "coder.md"
PANEL = "coder"
FROM_TURN = 10
TARGET_SHARE = 0.85
TARGET_ORIGINAL = 0.25
TARGET_LIKE_SHORT = 0.20
TARGET_LIKE_LONG = 0.25
TARGET_MINIMUM = 1.03
LAYOUTS = ("ours", "original", "like-for-like")


def totals(costs: Sequence[TurnCost]) -> TurnCost:
    return TurnCost(
        0,
        sum(c.requests for c in costs),
        sum(c.input_tokens for c in costs),
        sum(c.cache_write for c in costs),
        sum(c.cache_read for c in costs),
        any(c.trimmed for c in costs),
        sum(c.cache_write_1h for c in costs),
    )


def minimum_billed(ours: Sequence[TurnCost], gap: float) -> float:
    """The physical minimum of our session's requests (bench/cost_minimum.py)."""
    billed = 0.0
    for i, cost in enumerate(ours):
        after_trim = i > 0 and ours[i - 1].trimmed
        turn = minimum_turn(cost.records, first=i == 0, after_trim=after_trim, gap=gap)
        billed += turn.billed
    return billed


def row(label: str, ours: TurnCost, base: TurnCost) -> str:
    def half(c: TurnCost) -> str:
        mark = "T" if c.trimmed else " "
        return (
            f"{c.requests:>3} {c.input_tokens:>8,} {c.cache_write:>9,} {c.cache_write_1h:>9,} "
            f"{c.cache_read:>10,} {c.billed:>11,.0f} {c.read_share:>5.0%}{mark}"
        )

    return f"{label:>5} | {half(ours)} | {half(base)}"


def print_table(ours: list[TurnCost], base: list[TurnCost], every: int) -> None:
    cols = (
        f"{'req':>3} {'input':>8} {'cache wr':>9} {'of it 1h':>9} {'cache rd':>10} "
        f"{'billed eq':>11} {'read':>5} "
    )
    print(f"{'':>5} | {'ours':^{len(cols)}} | {'like-for-like (flattened, steps)':^{len(cols)}}")
    print(f"{'turn':>5} | {cols} | {cols}")
    for o, b in zip(ours, base, strict=True):
        if o.turn == 1 or o.turn % every == 0 or b.turn == len(base):
            print(row(str(o.turn), o, b))
    print("-" * (9 + 2 * len(cols) + 3))
    print(row("all", totals(ours), totals(base)))
    print(row(f"{FROM_TURN}+", totals(ours[FROM_TURN - 1 :]), totals(base[FROM_TURN - 1 :])))
    print(
        "T: the window was trimmed after this turn. "
        "billed eq = input + 1.25 5-minute write + 2.0 1-hour write + 0.1 read"
    )


def report(gap: float, runs: dict[str, list[TurnCost]]) -> bool:
    """The ratio lines of one gap, each ending `= N.NNNx`, then its targets; True if met."""
    ours = totals(runs["ours"]).billed
    short = gap < FIVE_MINUTES
    share = totals(runs["ours"][FROM_TURN - 1 :]).read_share
    like_billed, minimum = totals(runs["like-for-like"]).billed, minimum_billed(runs["ours"], gap)
    ratios = {
        "ours/original layout": ours / totals(runs["original"]).billed,
        "ours/like-for-like": ours / like_billed,
        "ours/physical minimum": ours / minimum,
    }
    for name, value in ratios.items():
        print(f"gap {gap:g} s: {name} = {value:.3f}x")
    # The floor of the like-for-like ratio: what the minimum itself scores against it.
    floor = minimum / like_billed
    print(f"gap {gap:g} s: physical minimum/like-for-like (the floor of any layout) = {floor:.3f}x")
    like = TARGET_LIKE_SHORT if short else TARGET_LIKE_LONG
    below = f" (below the floor {floor:.3f}x: no layout can meet it)" if like < floor else ""
    targets = [
        (f"ours/like-for-like <= {like}x{below}", ratios["ours/like-for-like"] <= like),
        (
            f"ours/physical minimum <= {TARGET_MINIMUM}x",
            ratios["ours/physical minimum"] <= TARGET_MINIMUM,
        ),
    ]
    if short:
        targets.insert(
            0,
            (
                f"ours/original layout <= {TARGET_ORIGINAL}x",
                ratios["ours/original layout"] <= TARGET_ORIGINAL,
            ),
        )
        targets.append(
            (
                f"cache-read share from turn {FROM_TURN} on {share:.1%} >= {TARGET_SHARE:.0%}",
                share >= TARGET_SHARE,
            )
        )
    for name, ok in targets:
        print(f"  target at gap {gap:g} s: {name}: {'met' if ok else 'MISSED'}")
    return all(ok for _, ok in targets)


async def run_gap(
    turns: int, model: str, low_water: float, cli_env: list[str], gap: float, ttl: TtlSetting
) -> dict[str, list[TurnCost]]:
    """The three layouts over the same session, each with `gap` seconds between turns."""
    config = InstanceConfig(model=model, window_low_water=low_water, prompt_cache_ttl=ttl)
    extra = dict(item.split("=", 1) for item in cli_env)
    inputs = [task_input(n) for n in range(1, turns + 1)]
    runs: dict[str, list[TurnCost]] = {name: [] for name in LAYOUTS}
    started = time.monotonic()

    def progress(name: str) -> Callable[[TurnCost], None]:
        def on_turn(cost: TurnCost) -> None:
            runs[name].append(cost)
            if cost.turn % 25 == 0:
                took = time.monotonic() - started
                print(f"  gap {gap:g} s, {name}: turn {cost.turn} ({took:.0f} s)", file=sys.stderr)

        return on_turn

    with tempfile.TemporaryDirectory(prefix="mnemara-token-cost-") as tmp:
        root = Path(tmp)
        home = root / "mnemara-home"
        for name in LAYOUTS:
            make_instance(home, name, ROLE_DOC, config)
        async with anyio.create_task_group() as tg:
            for name in LAYOUTS:
                tg.start_soon(
                    _run_layout, name, root, home, config, extra, inputs, gap, progress(name)
                )
        print(
            f"gap {gap:g} s: {turns} turns, model {model}, window caps {config.max_window_turns} "
            f"rows / {config.max_window_tokens:,} tokens, low water {config.window_low_water}, "
            f"our cache lifetime {config.prompt_cache_ttl}; "
            f"ran in {time.monotonic() - started:.0f} s"
        )
    return runs


async def _run_layout(
    name: str,
    root: Path,
    home: Path,
    config: InstanceConfig,
    extra: dict[str, str],
    inputs: list[str],
    gap: float,
    on_turn: Callable[[TurnCost], None],
) -> None:
    workspace = make_workspace(root / f"work-{name}")
    clock = GapClock()
    script = Script({PANEL: PanelScript(hook=Workload(workspace).reply)})
    async with open_rehearsal_server(script, clock=clock) as server:
        env = rehearsal_env(server.base_url_for(PANEL), _dir(root / f"cli-home-{name}"))
        env.update(extra)
        common = {
            "server": server,
            "panel": PANEL,
            "env": env,
            "home": home,
            "workspace": workspace,
            "inputs": inputs,
            "on_turn": on_turn,
            "clock": clock,
            "gap": gap,
        }
        if name == "ours":
            await run_ours(**common)  # type: ignore[arg-type]
        else:
            trimming = "fifo" if name == "original" else "steps"
            await run_flat(instance=name, config=config, trimming=trimming, **common)  # type: ignore[arg-type]


def _dir(path: Path) -> Path:
    path.mkdir(parents=True)
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=100, help="turns in the session")
    parser.add_argument(
        "--gap",
        type=float,
        action="append",
        metavar="SECONDS",
        help="time between turns on the model's clock (repeatable; default 2)",
    )
    parser.add_argument("--every", type=int, default=10, help="print every Nth turn")
    parser.add_argument("--model", default=InstanceConfig().model, help="model id sent")
    parser.add_argument(
        "--low-water",
        type=float,
        default=InstanceConfig().window_low_water,
        help="window_low_water of every instance (what a trim keeps of the caps)",
    )
    parser.add_argument(
        "--ttl",
        choices=["auto", "5m", "1h"],
        default="auto",
        help="prompt_cache_ttl of our instance (5m: what it did before it could choose)",
    )
    parser.add_argument(
        "--cli-env",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="extra environment for the CLI in every layout (repeatable), to try its switches",
    )
    args = parser.parse_args()
    gaps = args.gap or [2.0]
    if args.turns < FROM_TURN or args.every < 1 or any(g < 0 for g in gaps):
        parser.error(f"--turns must be >= {FROM_TURN}, --every >= 1 and every --gap >= 0")
    if any("=" not in item for item in args.cli_env):
        parser.error("--cli-env takes KEY=VALUE")
    met = True
    for gap in gaps:
        runs = anyio.run(
            run_gap,
            args.turns,
            args.model,
            args.low_water,
            args.cli_env,
            gap,
            args.ttl,
            backend="trio",
        )
        print_table(runs["ours"], runs["like-for-like"], args.every)
        met = report(gap, runs) and met
        load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
        print(f"load average {load}\n")
    sys.exit(0 if met else 1)


if __name__ == "__main__":
    main()
