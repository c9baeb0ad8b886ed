"""Two hosts, one PostgreSQL bus: their workspaces, team files and the host child.

    python bench/multihost_team.py --child TEAM_FILE --life ID

Team `alpha` (host A) runs the soak's `producer`; team `beta` (host B) runs `eng1` and
`eng2`. Both team files name the same `postgresql://` bus, and each host has a directory
of its own (MNEMARA_HOME, HOME, work dir, marks file, output), as two machines would.

The ops come from `dispatcher` as peer messages on the shared bus, not as operator input:
operator input of a team whose bus is not its default file goes to the host's own local
bus (panels/host/host.py `operator_bus_path`), which the other host never sees. A peer
payload reaches the turn as JSON in a fence (`"text": "op-7"`), which the soak driver's
`plan_sends` does not read as an op line, so `RelayDriver` restates each such op as the
operator line the soak driver answers, then runs the soak driver unchanged.
"""

from __future__ import annotations

import argparse
import dataclasses
import random
import re
import sys
from collections.abc import AsyncGenerator, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).parent))

from soak_driver import (
    BATCH,
    ENGINEERS,
    MARKS,
    PRODUCER,
    SENDS_TABLE,
    SoakDriver,
    turn_input,
)
from soak_team import lay_out

from panels.host.process import run_headless
from panels.team import PanelSpec, TeamSpec, load_team
from runtime.instance.home import InstancePaths
from runtime.turn.driver import AgentDriver, DriverEvent, TurnRequest

DISPATCHER = "dispatcher"
HARNESS_RATE = 100_000  # the highest `[team.loops] rate_messages` takes
SCRIPT = Path(__file__).resolve()
# A dispatcher's op as the bus renders its payload (json.dumps with sorted keys).
OP_PAYLOAD = re.compile(r'"text": "op-(\d+)"')


@dataclass(frozen=True)
class HostDir:
    """One host's machine: its own homes, team file, marks and output."""

    name: str  # "A" or "B"
    root: Path
    home: Path
    user_home: Path
    team_file: Path
    team: TeamSpec

    @property
    def marks(self) -> Path:
        return self.root / MARKS

    @property
    def log(self) -> Path:
        return self.root / "host.out"

    def turns(self) -> dict[str, Path]:
        return {
            spec.name: InstancePaths.for_name(spec.instance, self.home).turns
            for spec in self.team.panels
        }


def _string_list(names: Sequence[str]) -> str:
    return "[" + ", ".join(f'"{n}"' for n in names) + "]"


def team_toml(team: str, bus: str, members: Sequence[tuple[str, str, Sequence[str]]]) -> str:
    """A team file: (name, role file, listens_to) per panel, all on the bus `bus`."""
    lines = ["[team]", f'name = "{team}"', 'workdir = "work"', f'bus = "{bus}"']
    lines.append("max_concurrent_turns = 2")
    # The team loop rules' rate bound (panels/host/loops/rules.py: 60 messages on an edge in
    # 300 s halts the sender) would stop this harness's 1,000 tasks as it stops a runaway;
    # raised like the send window (soak_driver.py). The other loop rules stay as they are.
    lines += ["[team.loops]", f"rate_messages = {HARNESS_RATE}", *SENDS_TABLE]
    for name, role, senders in members:
        lines += ["", "[[panels]]", f'name = "{name}"', f'role = "roles/{role}"']
        if name == PRODUCER:
            lines.append('kind = "producer"')
        lines += [f"listens_to = {_string_list(senders)}", "runtime_sentinel = false"]
        lines += ["[panels.batch]", f"max_messages = {BATCH}"]  # soak_driver.py: BATCH
    return "\n".join(lines) + "\n"


def make_host(root: Path, name: str, team_text: str) -> HostDir:
    """A host's directory with its team file and instances (window limits that never trim,
    so every consumed id stays in the window rows)."""
    home, user_home, team_file, team = lay_out(root, team_text)
    return HostDir(name, root, home, user_home, team_file, team)


def make_hosts(root: Path, bus_a: str, bus_b: str) -> tuple[HostDir, HostDir]:
    """Host A (team alpha: the producer) and host B (team beta: the engineers); `bus_a` and
    `bus_b` are the one bus as each host reaches it."""
    producer = [(PRODUCER, "producer.md", (*ENGINEERS, DISPATCHER))]
    engineers = [(name, "engineer.md", (PRODUCER,)) for name in ENGINEERS]
    a = make_host(root / "host-a", "A", team_toml("alpha", bus_a, producer))
    b = make_host(root / "host-b", "B", team_toml("beta", bus_b, engineers))
    return a, b


def restate_ops(request: TurnRequest) -> TurnRequest:
    """The request with every dispatcher op of its input added as an `op-<n>` line."""
    text = turn_input(request)
    ops = OP_PAYLOAD.findall(text)
    if not ops:
        return request
    last = {**request.blocks[-1], "text": text + "\n\n" + "\n".join(f"op-{n}" for n in ops)}
    return dataclasses.replace(request, blocks=(*request.blocks[:-1], last))


class RelayDriver(SoakDriver):
    """The soak driver, reading the dispatcher's ops from peer messages too."""

    def run_turn(self, request: TurnRequest) -> AsyncGenerator[DriverEvent, None]:
        return super().run_turn(restate_ops(request))


def relay_drivers(marks: Path, life: str) -> Callable[[PanelSpec], AgentDriver]:
    def make(spec: PanelSpec) -> AgentDriver:
        return RelayDriver(spec.name, marks, random.Random(f"{life}:{spec.name}"))

    return make


def run_child(team_file: str, life: str) -> None:
    """One life of a host, as `mnemara up --headless` runs it, until SIGTERM or SIGKILL."""
    team = load_team(team_file)
    drivers = relay_drivers(Path(team_file).parent / MARKS, life)

    def out(line: str) -> None:
        print(line, flush=True)

    async def main() -> None:
        await run_headless(team, out=out, life=life, drivers=drivers)

    anyio.run(main, backend="trio")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--child", required=True, help="the team file of the host to run")
    parser.add_argument("--life", default="", help="this life's id")
    args = parser.parse_args()
    run_child(args.child, args.life)


if __name__ == "__main__":
    main()
