"""Prompt-cache cost of a long coding session: our layout against the original's, offline.

A 100-turn scripted coding session (reads, edits, test runs; the context grows until the
window trims) runs through the real Claude Code CLI bundled with the SDK, twice, each against
its own rehearsal model (runtime/rehearsal/), which bills every request by the prompt-cache
rules from the request bytes:

- ours: `open_session` + `ClaudeDriver`, the layout of runtime/prompt.py;
- baseline: the original's layout, the whole window as one flattened text block with FIFO
  trimming every turn (bench/cost_layouts.py).

Both runs go at once (separate servers, caches and workspaces). Printed: per-turn and total
input tokens, cache writes, cache reads, billed input-token equivalents (reads 0.1x,
5-minute writes 1.25x) and the cache-read share, then the two targets:
cache-read share >= 85% of input tokens from turn 10 on, and billed <= 0.25x the baseline.

    .venv/bin/python bench/token_cost.py [--turns 100] [--every 5] [--model claude-opus-4-7]
        [--low-water 0.75] [--cli-env KEY=VALUE ...]

The figures depend on the model id, because the CLI shapes its requests per model: for
claude-opus-4-7 (our default) it puts its environment and date reminders at the start of the
user message and its last breakpoint on the last block, so the baseline's second and third
requests of a turn read the first one's entry; for claude-opus-5-5 they go in a trailing
system message that changes shape after a tool call, and the baseline re-writes every request.
`--low-water` and `--cli-env` are there to measure the levers (window steps, CLI switches).

No network, no key, no tokens: the CLI's HOME is a temp dir and its base URL is loopback.
Exit status 0 when both targets are met, 1 otherwise.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).parent))

from cost_layouts import TurnCost, make_instance, run_baseline, run_ours
from cost_workload import Workload, make_workspace, task_input

from runtime.config import InstanceConfig
from runtime.rehearsal import PanelScript, Script, open_rehearsal_server
from runtime.rehearsal.env import rehearsal_env

ROLE_DOC = Path(__file__).parent.parent / "examples" / "roles" / "coder.md"
PANEL = "coder"
FROM_TURN = 10
TARGET_SHARE = 0.85
TARGET_RATIO = 0.25


def totals(costs: Sequence[TurnCost]) -> TurnCost:
    return TurnCost(
        0,
        sum(c.requests for c in costs),
        sum(c.input_tokens for c in costs),
        sum(c.cache_write for c in costs),
        sum(c.cache_read for c in costs),
        any(c.trimmed for c in costs),
    )


def row(label: str, ours: TurnCost, base: TurnCost) -> str:
    def half(c: TurnCost) -> str:
        mark = "T" if c.trimmed else " "
        return (
            f"{c.requests:>3} {c.input_tokens:>8,} {c.cache_write:>9,} {c.cache_read:>10,} "
            f"{c.billed:>11,.0f} {c.read_share:>5.0%}{mark}"
        )

    return f"{label:>5} | {half(ours)} | {half(base)}"


def print_table(ours: list[TurnCost], base: list[TurnCost], every: int) -> None:
    cols = (
        f"{'req':>3} {'input':>8} {'cache wr':>9} {'cache rd':>10} {'billed eq':>11} {'read':>5} "
    )
    print(f"{'':>5} | {'ours':^{len(cols)}} | {'baseline (flattened, FIFO)':^{len(cols)}}")
    print(f"{'turn':>5} | {cols} | {cols}")
    for o, b in zip(ours, base, strict=True):
        if o.turn == 1 or o.turn % every == 0 or o.trimmed or b.turn == len(base):
            print(row(str(o.turn), o, b))
    print("-" * (9 + 2 * len(cols) + 3))
    print(row("all", totals(ours), totals(base)))
    late_o, late_b = totals(ours[FROM_TURN - 1 :]), totals(base[FROM_TURN - 1 :])
    print(row(f"{FROM_TURN}+", late_o, late_b))
    print("T: the window was trimmed after this turn. billed eq = input + 1.25 write + 0.1 read")


def check_targets(ours: list[TurnCost], base: list[TurnCost]) -> bool:
    late = totals(ours[FROM_TURN - 1 :])
    ratio = totals(ours).billed / totals(base).billed
    share_ok, ratio_ok = late.read_share >= TARGET_SHARE, ratio <= TARGET_RATIO
    print(
        f"target 1: cache-read share from turn {FROM_TURN} on = {late.read_share:.1%} "
        f"(>= {TARGET_SHARE:.0%}): {'met' if share_ok else 'MISSED'}"
    )
    print(
        f"target 2: billed input equivalents ours/baseline = {ratio:.3f}x "
        f"(<= {TARGET_RATIO}x): {'met' if ratio_ok else 'MISSED'}"
    )
    return share_ok and ratio_ok


async def run(turns: int, model: str, every: int, low_water: float, cli_env: list[str]) -> bool:
    config = InstanceConfig(model=model, window_low_water=low_water)
    extra = dict(item.split("=", 1) for item in cli_env)
    inputs = [task_input(n) for n in range(1, turns + 1)]
    ours: list[TurnCost] = []
    base: list[TurnCost] = []
    started = time.monotonic()

    def progress(costs: list[TurnCost], name: str) -> Callable[[TurnCost], None]:
        def on_turn(cost: TurnCost) -> None:
            costs.append(cost)
            if cost.turn % 20 == 0:
                took = time.monotonic() - started
                print(f"  {name}: turn {cost.turn} ({took:.0f} s)", file=sys.stderr)

        return on_turn

    with tempfile.TemporaryDirectory(prefix="mnemara-token-cost-") as tmp:
        root = Path(tmp)
        work_o, work_b = make_workspace(root / "work-ours"), make_workspace(root / "work-base")
        home = root / "mnemara-home"
        make_instance(home, "ours", ROLE_DOC, config)
        make_instance(home, "baseline", ROLE_DOC, config)
        model_o, model_b = Workload(work_o), Workload(work_b)
        script_o = Script({PANEL: PanelScript(hook=model_o.reply)})
        script_b = Script({PANEL: PanelScript(hook=model_b.reply)})
        async with (
            open_rehearsal_server(script_o) as server_o,
            open_rehearsal_server(script_b) as server_b,
            anyio.create_task_group() as tg,
        ):
            env_o = rehearsal_env(server_o.base_url_for(PANEL), _dir(root / "cli-home-ours"))
            env_b = rehearsal_env(server_b.base_url_for(PANEL), _dir(root / "cli-home-base"))
            env_o.update(extra)
            env_b.update(extra)
            tg.start_soon(
                lambda: run_ours(
                    server=server_o,
                    panel=PANEL,
                    env=env_o,
                    home=home,
                    workspace=work_o,
                    inputs=inputs,
                    on_turn=progress(ours, "ours"),
                )
            )
            tg.start_soon(
                lambda: run_baseline(
                    server=server_b,
                    panel=PANEL,
                    env=env_b,
                    home=home,
                    config=config,
                    workspace=work_b,
                    inputs=inputs,
                    on_turn=progress(base, "baseline"),
                )
            )
        print(
            f"{turns} turns, model {model}, role doc {ROLE_DOC.name}, window caps "
            f"{config.max_window_turns} rows / {config.max_window_tokens:,} tokens, "
            f"low water {config.window_low_water}; ran in {time.monotonic() - started:.0f} s"
        )
        if extra:
            print(f"extra CLI environment: {extra}")
        print_table(ours, base, every)
        return check_targets(ours, base)


def _dir(path: Path) -> Path:
    path.mkdir(parents=True)
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=100, help="turns in the session")
    parser.add_argument("--every", type=int, default=5, help="print every Nth turn")
    parser.add_argument("--model", default=InstanceConfig().model, help="model id sent")
    parser.add_argument(
        "--low-water",
        type=float,
        default=InstanceConfig().window_low_water,
        help="window_low_water of both instances (what a trim keeps of the caps)",
    )
    parser.add_argument(
        "--cli-env",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="extra environment for the CLI in both layouts (repeatable), to try its switches",
    )
    args = parser.parse_args()
    met = anyio.run(
        run, args.turns, args.model, args.every, args.low_water, args.cli_env, backend="trio"
    )
    sys.exit(0 if met else 1)


if __name__ == "__main__":
    main()
