"""`mnemara demo`: the producer-engineer-watchdog team on the rehearsal model, start to end.

The example team is copied to a scratch directory (its work directory and MNEMARA_HOME go
there too), the host runs it headless with the team's rehearsal script, the operator's
request goes in through the control table, and the demo waits until the team is quiet:
no turn running, nothing waiting for a panel that may run, no digest due. Then it stops the
host cleanly and prints what happened, what each panel spent, and the checks that matter
(the runaway was halted, nothing is left claimed on the bus).
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import anyio

from panels.host.account import printer, table
from panels.host.host import Host
from panels.hostdb import connect, submit_command
from panels.hostdb.verbs import Input
from panels.team import load_team

REQUEST = "Build a word counter: a wordcount.py that counts words, then a --top N option."
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "teams" / "trio"


@dataclass(frozen=True)
class DemoResult:
    quiet: bool  # the team went quiet before the timeout
    halted: bool  # the engineer was halted by the watchdog
    claimed: int  # messages left leased on the bus after shutdown
    seconds: float


async def run_demo(
    scratch: Path,
    *,
    out: Callable[[str], None] = print,
    example: Path = EXAMPLE,
    request: str = REQUEST,
    limit: float = 90.0,
    quiet_for: float = 2.5,
) -> DemoResult:
    team_dir = scratch / example.name
    shutil.copytree(example, team_dir, ignore=shutil.ignore_patterns("work"))
    team = load_team(team_dir / "team.toml", home=scratch / "home")
    out(f"mnemara demo: {len(team.panels)} panels on the rehearsal model (loopback, no key)")
    out(f"team file {team.source}; state under {team.state_dir}")
    out(f"operator -> producer: {request}")
    out("")
    started = anyio.current_time()
    host = Host(team, home=scratch / "home", grace=10.0, listeners=[printer(out)])
    quiet = False
    async with anyio.create_task_group() as tg:
        await tg.start(host.serve)
        viewer = connect(team.hostdb_path)
        try:
            submit_command(viewer, Input(panel="producer", text=request))
        finally:
            viewer.close()
        with anyio.move_on_after(limit):
            quiet = await _until_quiet(host, quiet_for)
        host.request_stop()
    claimed = await _claimed(team.bus_path)
    runners = host.panels
    halted = runners["engineer"].halt is not None if "engineer" in runners else False
    seconds = anyio.current_time() - started
    out("")
    out("--- what each panel did ---")
    for line in table([r.status_row() for r in runners.values()]):
        out(line)
    if host.rehearsal is not None:
        totals = host.rehearsal.totals()
        reported = sum(r.spent().usd for r in runners.values())
        out(f"model requests answered by the rehearsal model: {totals.requests}, billed "
            f"${totals.cost_usd:.4f}; reported to the panels' budgets ${reported:.4f} "
            "(a request cut off by a stop is never reported to them)")  # fmt: skip
    out(f"the watchdog halted the runaway engineer: {'yes' if halted else 'NO'}")
    out(f"messages left claimed on the bus: {claimed}")
    out(f"finished {'quietly' if quiet else 'at the timeout'} in {seconds:.1f}s")
    return DemoResult(quiet, halted, claimed, seconds)


async def _until_quiet(host: Host, quiet_for: float) -> bool:
    since: float | None = None
    while True:
        await anyio.sleep(0.25)
        now = anyio.current_time()
        if await host.quiet():
            since = since if since is not None else now
            if now - since >= quiet_for:
                return True
        else:
            since = None


async def _claimed(bus_path: Path) -> int:
    from peerbus import open_bus

    async with open_bus(bus_path) as bus:
        stats = await bus.stats()
    return sum(r.leased for r in stats.recipients)
