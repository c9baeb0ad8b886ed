"""A host in a child process whose panel `a` blocks mid-turn: the parent kills it with -9.

    python tests/panels/host/host_child.py TEAM.toml
Prints STARTED once `a` is inside its turn (the in-flight row is stored, the message leased).
"""

from __future__ import annotations

import sys
from pathlib import Path

import anyio

from panels.host import Host
from panels.team import load_team
from runtime.turn.driver import AgentDriver
from runtime.turn.scripted import ScriptedDriver
from tests.panels.host.conftest import BlockingDriver


async def main(team_file: str) -> None:
    team = load_team(team_file, home=Path(team_file).parent / "mnemara-home")
    blocking = BlockingDriver()

    def drivers(spec: object) -> AgentDriver:
        return blocking if getattr(spec, "name", "") == "a" else ScriptedDriver([])

    host = Host(team, drivers=drivers, home=team.state_dir.parents[1])
    async with anyio.create_task_group() as tg:
        await tg.start(host.serve)
        await blocking.started.wait()
        print("STARTED", flush=True)
        await anyio.sleep_forever()


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], backend="trio")
