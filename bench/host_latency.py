"""Latency inside one host, without the model (scripted drivers answer at once):

- a verb written into the control table by another connection (as `mnemara halt` or the
  dashboard would) -> the host has applied it: with the host busy (verbs 50 ms apart) and
  quiet (1.5 s apart, so the waiter has parked on inotify). Target: p95 < 20 ms;
- operator input through the control table -> the turn that takes it starts;
- delivery between two panels: panel A's `send_message` tool call -> panel B's turn start.

    .venv/bin/python bench/host_latency.py [--rounds 30]

Times are wall-clock (`time.time()`) at the write and at the emit of the event, in one
process; the load average is printed with the figures.
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
    from panels.host.delivery.feed import OPERATOR, operator_route
    from panels.hostdb import Logged, connect, submit_command
    from panels.hostdb.catalogue import ToolCalled, TurnStarted, VerbApplied
    from panels.hostdb.verbs import Input, SetInbox
    from panels.team import parse_team
    from peerbus.sqlite import close_bus, connect_bus, submit
    from runtime.turn.driver import Done, TextDelta, ToolCall, Usage
    from runtime.turn.scripted import ScriptedDriver

    (scratch / "work").mkdir()
    team = parse_team('[team]\nname = "lat"\nworkdir = "work"\n[[panels]]\nname = "a"\n'
                      '[[panels]]\nname = "b"\n', source=scratch / "team.toml",
                      home=scratch / "home")  # fmt: skip
    plain = [TextDelta("ok"), Usage(1, 1), Done()]
    send = ToolCall("s", "mcp__mnemara__send_message", {"to": "b", "text": "ping"})
    drivers = {
        "a": ScriptedDriver([plain] * rounds + [[send, Usage(1, 1), Done()]] * rounds),
        "b": ScriptedDriver([plain] * rounds),
    }
    started: dict[str, list[float]] = {"a": [], "b": []}
    applied: dict[int, float] = {}
    sends: list[float] = []
    changed = anyio.Event()

    def listen(logged: Logged) -> None:
        nonlocal changed
        # logged.ts is the wall-clock time of the emit, not of the (batched) write.
        event = logged.event
        if isinstance(event, TurnStarted):
            started[str(event.panel)].append(logged.ts)
        elif isinstance(event, ToolCalled) and event.panel == "a":
            sends.append(logged.ts)
        elif isinstance(event, VerbApplied) and event.id is not None:
            applied[event.id] = logged.ts
        changed.set()
        changed = anyio.Event()

    async def until(done: object) -> None:
        while not done():  # type: ignore[operator]
            await changed.wait()

    host = Host(team, drivers=lambda spec: drivers[spec.name], home=scratch / "home",
                listeners=[listen], log_interval=0.01)  # fmt: skip
    busy, quiet, via_control, between = [], [], [], []
    async with anyio.create_task_group() as tg:
        await tg.start(host.serve)
        bus = connect_bus(Path(team.bus))
        viewer = connect(team.hostdb_path)
        for pause, samples in ((0.05, busy), (1.5, quiet)):
            for i in range(rounds):
                await anyio.sleep(pause)
                t0 = time.time()
                ident = submit_command(viewer, SetInbox(panel="b", on=i % 2 == 0))
                await until(lambda ident=ident: ident in applied)
                samples.append(applied[ident] - t0)
        for i in range(rounds):
            t0 = time.time()
            submit_command(viewer, Input(panel="a", text=f"y{i}"))
            await until(lambda n=i + 1: len(started["a"]) >= n)
            via_control.append(started["a"][-1] - t0)
            await anyio.sleep(0.05)
        submit_command(viewer, SetInbox(panel="b", on=True))
        for i in range(rounds):
            submit(bus, OPERATOR, operator_route("a"), {"type": "input", "text": f"z{i}"})
            await until(lambda n=i + 1: len(started["b"]) >= n)
            between.append(started["b"][-1] - sends[-1])
            await anyio.sleep(0.05)
        close_bus(bus)
        viewer.close()
        host.request_stop()
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"load average: {load} (cores: {os.cpu_count()})")
    print(summary("control-table verb -> applied, host busy (verbs 50 ms apart)", busy))
    print(summary("control-table verb -> applied, host quiet (verbs 1.5 s apart)", quiet))
    print(summary("operator input via the control table -> turn start", via_control))
    print(summary("panel A send_message -> panel B turn start", between))


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=30)
    args = parser.parse_args()
    anyio.run(main, args.rounds, backend="trio")
