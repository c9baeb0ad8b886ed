"""What the sandbox costs: per Bash call (target < 30 ms) and per turn. Issue 16.
And what a turn's checkpoint costs (issue 28: target < 50 ms on 2,000 files).

    .venv/bin/python bench/sandbox.py [--calls 200] [--turns 8] [--files 2000]

- per call: a loop of `--calls` commands `true`, started from Python inside one sandbox
  built with a turn's real plan (runtime/sandbox/plan.py) through the plan's shell prefix,
  as the CLI runs them (each in a nested namespace: runtime/sandbox/isolate.py), and the
  same loop outside with `bash -c true`, side by side in this run; the difference per call
  is the sandbox's cost to a Bash call.
- per turn: `--turns` whole session turns through the real bundled CLI on the rehearsal
  model, each making one allowed Bash call, alternating unconfined and sandboxed; medians of
  each and their difference (bubblewrap, the relay's Python and the gateway, once a turn).
- per turn, checkpoint: the checkpoint the host takes before each turn, on a repository of
  `--files` files: the first, a later one after a small turn, one after a turn that changed
  nothing, and a rewind (bench/checkpoint.py, which also runs alone).

Every figure line ends with the load average when it was measured.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

PER_CALL_TARGET_MS = 30.0
LOOP = (
    "import subprocess, sys\n"
    "for _ in range(int(sys.argv[1])):\n"
    "    subprocess.run([*sys.argv[2:], 'true'], check=True)\n"
)


def load() -> str:
    one, five, _ = os.getloadavg()
    return f"(load {one:.2f} / {five:.2f})"


def per_call(calls: int) -> None:
    from runtime.sandbox import SandboxSettings, probe
    from runtime.sandbox.launch import RELAY, relay_python, write_files
    from runtime.sandbox.plan import INSIDE, build_plan

    support = probe()
    if support.bwrap is None:
        print(f"per call: cannot measure, {support.reason}")
        return
    with tempfile.TemporaryDirectory() as tmp:
        work, gateway = Path(tmp) / "work", Path(tmp) / "gw"
        work.mkdir()
        gateway.mkdir()
        (work / "loop.py").write_text(LOOP, encoding="utf-8")
        plan = build_plan(
            bwrap=support.bwrap,
            cli=Path(sys.executable),
            python=relay_python(),
            relay=RELAY,
            gateway_dir=gateway,
            cwd=work,
            env={"ANTHROPIC_BASE_URL": "http://127.0.0.1:9/p/x", "HOME": str(Path(tmp) / "h")},
            settings=SandboxSettings(),
            user_home=Path(tmp) / "h",
            state_home=None,
        )
        write_files(gateway, plan)
        inside = plan.argv[: plan.argv.index("--")]
        prefix = [str(INSIDE / "isolate")] if "isolate" in plan.files else ["bash", "-c"]
        python = str(relay_python())
        timings: dict[str, float] = {}
        for label, argv in (
            ("outside", [python, "loop.py", str(calls), "bash", "-c"]),
            ("inside", [*inside, "--", python, "loop.py", str(calls), *prefix]),
            ("shared", [*inside, "--", python, "loop.py", str(calls), "bash", "-c"]),
        ):
            start = time.perf_counter()
            subprocess.run(argv, cwd=work, check=True)
            timings[label] = (time.perf_counter() - start) * 1000 / calls
    extra = timings["inside"] - timings["outside"]
    print(
        f"per Bash call: {timings['outside']:.2f} ms outside, {timings['inside']:.2f} ms inside, "
        f"extra {extra:+.2f} ms (target < {PER_CALL_TARGET_MS:.0f} ms) {load()}"
    )
    nested = timings["inside"] - timings["shared"]
    print(
        f"  of which the command's own namespace: {nested:+.2f} ms "
        f"(inside without the prefix: {timings['shared']:.2f} ms) {load()}"
    )


SCRIPT = """
[[panels.eng.replies]]
when = { user_text_contains = "go" }
content = [ { tool_use = "Bash", input = { command = "true" } } ]

[[panels.eng.replies]]
when = { tool_result_contains = "" }
text = "done"
"""


async def per_turn(turns: int) -> None:
    from runtime.claude import ClaudeDriver
    from runtime.instance.config import (
        InstanceConfig,
        ToolPolicy,
        default_tool_policies,
        save_config,
    )
    from runtime.instance.home import InstancePaths
    from runtime.rehearsal import open_rehearsal_server, parse_script
    from runtime.rehearsal.env import rehearsal_env
    from runtime.sandbox import Sandbox, SandboxSettings, probe
    from runtime.store import TurnStore
    from runtime.turn.open import open_session

    support = probe()
    if support.bwrap is None:
        print(f"per turn: cannot measure, {support.reason}")
        return
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        os.environ["MNEMARA_HOME"] = str(base / "state")
        os.environ["HOME"] = str(base / "home")
        work = base / "home" / "work"
        work.mkdir(parents=True)
        bash = ToolPolicy(tool="Bash", mode="ask", allowed_patterns=("true",))
        others = tuple(p for p in default_tool_policies() if p.tool != "Bash")
        async with open_rehearsal_server(parse_script(SCRIPT)) as server:
            env = rehearsal_env(server.base_url_for("eng"), base / "cli-home")
            sandbox = Sandbox(SandboxSettings(), support.bwrap, base / "home", base / "state")
            walls: dict[str, list[float]] = {"unconfined": [], "sandboxed": []}
            for i in range(turns * 2):
                label = "sandboxed" if i % 2 else "unconfined"
                name = f"b{i}"
                paths = InstancePaths.for_name(name, base / "state")
                paths.root.mkdir(parents=True)
                paths.role.write_text("# bench\n", encoding="utf-8")
                config = InstanceConfig(
                    role_doc_path=str(paths.role), allowed_tools=(bash, *others)
                )
                save_config(paths.config, config)
                TurnStore.open(paths.turns).close()
                driver = ClaudeDriver(env=env, sandbox=sandbox if label == "sandboxed" else None)
                async with open_session(name, driver=driver, cwd=work) as session:
                    start = time.perf_counter()
                    [e async for e in session.turn("go")]
                    walls[label].append(time.perf_counter() - start)
    plain = statistics.median(walls["unconfined"]) * 1000
    boxed = statistics.median(walls["sandboxed"]) * 1000
    print(
        f"per turn (one Bash call, real CLI, median of {turns}): {plain:.0f} ms unconfined, "
        f"{boxed:.0f} ms sandboxed, extra {boxed - plain:+.0f} ms {load()}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=200, help="Bash calls per side")
    parser.add_argument("--turns", type=int, default=8, help="turns per side")
    parser.add_argument("--files", type=int, default=2000, help="files for the checkpoint")
    args = parser.parse_args()
    if args.calls < 1 or args.turns < 1 or args.files < 1:
        parser.error("--calls, --turns and --files must be at least 1")
    per_call(args.calls)
    import anyio

    anyio.run(per_turn, args.turns)
    from checkpoint import per_checkpoint  # bench/checkpoint.py, beside this script

    per_checkpoint(args.files)


if __name__ == "__main__":
    main()
