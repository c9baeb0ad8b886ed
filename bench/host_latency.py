"""Latency inside one host, without the model (scripted drivers answer at once):

- operator input -> turn start, through the bus (what `mnemara send` writes) and through
  the control table (what the dashboard writes); the writer is another connection, as a
  viewer process would be;
- delivery between two panels: panel A's `send_message` tool call -> panel B's turn start.

    .venv/bin/python bench/host_latency.py [--rounds 30]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

import anyio


def summary(name: str, samples: list[float]) -> str:
    ms = sorted(s * 1000 for s in samples)
    p95 = ms[min(len(ms) - 1, int(0.95 * len(ms)))]
    return (f"{name}: median {statistics.median(ms):.1f} ms, p95 {p95:.1f} ms, "
            f"max {ms[-1]:.1f} ms (n={len(ms)})")  # fmt: skip


async def main(rounds: int) -> None:
    scratch = Path(tempfile.mkdtemp(prefix="host-latency-"))
    os.environ["MNEMARA_HOME"] = str(scratch / "home")
    from panels.host import Host
    from panels.host.delivery import OPERATOR, operator_route
    from panels.hostdb import Event, connect, submit_command
    from panels.team import parse_team
    from peerbus import close_bus, connect_bus, submit
    from runtime.driver import Done, TextDelta, ToolCall, Usage
    from runtime.scripted import ScriptedDriver

    (scratch / "work").mkdir()
    team = parse_team('[team]\nname = "lat"\nworkdir = "work"\n[[panels]]\nname = "a"\n'
                      '[[panels]]\nname = "b"\n', source=scratch / "team.toml",
                      home=scratch / "home")  # fmt: skip
    plain = [TextDelta("ok"), Usage(1, 1), Done()]
    send = ToolCall("s", "mcp__mnemara__send_message", {"to": "b", "text": "ping"})
    drivers = {
        "a": ScriptedDriver([plain] * (2 * rounds) + [[send, Usage(1, 1), Done()]] * rounds),
        "b": ScriptedDriver([plain] * rounds),
    }
    started: dict[str, list[float]] = {"a": [], "b": []}
    sends: list[float] = []
    changed = anyio.Event()

    def listen(event: Event) -> None:
        nonlocal changed
        # event.ts is the wall-clock time of the emit, not of the (batched) write.
        if event.kind == "turn_started":
            started[str(event.panel)].append(event.ts)
        if event.kind == "tool_call" and event.panel == "a":
            sends.append(event.ts)
        changed.set()
        changed = anyio.Event()

    async def turns(panel: str, count: int) -> None:
        while len(started[panel]) < count:
            await changed.wait()

    host = Host(team, drivers=lambda spec: drivers[spec.name], home=scratch / "home",
                listeners=[listen])  # fmt: skip
    via_bus, via_control, between = [], [], []
    async with anyio.create_task_group() as tg:
        await tg.start(host.serve)
        bus = connect_bus(team.bus_path)
        viewer = connect(team.hostdb_path)
        for i in range(rounds):
            t0 = time.time()
            submit(bus, OPERATOR, operator_route("a"), {"type": "input", "text": f"x{i}"})
            await turns("a", len(started["a"]) + 1)
            via_bus.append(started["a"][-1] - t0)
            await anyio.sleep(0.05)
        for i in range(rounds):
            t0 = time.time()
            submit_command(viewer, "input", panel="a", args={"text": f"y{i}"})
            await turns("a", len(started["a"]) + 1)
            via_control.append(started["a"][-1] - t0)
            await anyio.sleep(0.05)
        for i in range(rounds):
            submit(bus, OPERATOR, operator_route("a"), {"type": "input", "text": f"z{i}"})
            await turns("b", i + 1)
            between.append(started["b"][-1] - sends[-1])
            await anyio.sleep(0.05)
        close_bus(bus)
        viewer.close()
        host.request_stop()
    print(summary("operator input via the bus -> turn start", via_bus))
    print(summary("operator input via the control table -> turn start", via_control))
    print(summary("panel A send_message -> panel B turn start", between))


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=30)
    args = parser.parse_args()
    anyio.run(main, args.rounds, backend="trio")
