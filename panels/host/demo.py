"""`mnemara demo`: the producer-engineer-watchdog team on the rehearsal model, start to end.

The example team is copied to a scratch directory (its work directory and MNEMARA_HOME go
there too), the host runs it with the team's rehearsal script, and the operator's request
goes in through the control table. Then one of two things:

- alone (no terminal, the tests): every event is printed as a line, the demo answers the
  engineer's approval itself (`yes`, through the control table, as `mnemara approve` would)
  and waits until the team is quiet: no turn running, nothing waiting for a panel that may
  run, no digest due;
- under a viewer (`viewer=True`: the dashboard in front, panels/cli/front.py): nothing is
  printed while the dashboard owns the screen, the operator answers the approval in its
  modal, and the demo runs until the viewer asks it to stop (`task_status.started` hands
  the viewer that stop).

Either way it then stops the host cleanly and prints what each panel did and the checks
that matter (the runaway was halted, nothing is left claimed on the bus).
"""

from __future__ import annotations

import math
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import anyio
import anyio.abc
from anyio.streams.memory import MemoryObjectReceiveStream

from panels.host.control.account import printer, table
from panels.host.control.eventlog import Listener
from panels.host.host import Host
from panels.hostdb import Logged, connect, submit_command
from panels.hostdb.catalogue import ApprovalAnswered, ApprovalAsked
from panels.hostdb.verbs import AnswerRequest, Input
from panels.team import TeamSpec, load_team
from panels.text import clean
from runtime.policy.asking import Answer

REQUEST = "Build a word counter: a wordcount.py that counts words, then a --top N option."
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "teams" / "trio"


@dataclass(frozen=True)
class DemoResult:
    quiet: bool  # the team was quiet at the end (alone: before the timeout)
    halted: bool  # the engineer was halted by the watchdog
    claimed: int  # messages left leased on the bus after shutdown
    seconds: float
    asked: tuple[int, ...] = ()  # approval requests the host asked the operator
    answers: tuple[str, ...] = ()  # the answers they got, in order


class _Approvals:
    """A host listener that keeps the approvals asked and answered, and queues the asked
    ones for the demo to answer when it runs alone."""

    def __init__(self) -> None:
        self.asked: list[ApprovalAsked] = []
        self.answers: list[str] = []
        self.send, self.receive = anyio.create_memory_object_stream[ApprovalAsked](math.inf)

    def __call__(self, logged: Logged) -> None:
        event = logged.event
        if isinstance(event, ApprovalAsked):
            self.asked.append(event)
            self.send.send_nowait(event)
        elif isinstance(event, ApprovalAnswered):
            self.answers.append(event.answer)


def demo_team(scratch: Path, example: Path = EXAMPLE) -> TeamSpec:
    """A copy of the example team in `scratch`, its state and MNEMARA_HOME there too."""
    team_dir = scratch / example.name
    shutil.copytree(example, team_dir, ignore=shutil.ignore_patterns("work"))
    return load_team(team_dir / "team.toml", home=scratch / "home")


async def run_demo(
    scratch: Path,
    *,
    out: Callable[[str], None] = print,
    example: Path = EXAMPLE,
    request: str = REQUEST,
    limit: float = 90.0,
    quiet_for: float = 2.5,
    team: TeamSpec | None = None,
    viewer: bool = False,
    task_status: anyio.abc.TaskStatus[Callable[[], None]] = anyio.TASK_STATUS_IGNORED,
) -> DemoResult:
    """Run the demo team (`team`, from `demo_team`, or a fresh copy of `example`); alone
    until quiet (or `limit`), or with a `viewer` until it asks to stop (through the callable
    given to `task_status.started`)."""
    team = team or demo_team(scratch, example)
    out(f"mnemara demo: {len(team.panels)} panels on the rehearsal model (loopback, no key)")
    out(f"team file {team.source}; state under {team.state_dir}")
    out(f"operator -> producer: {request}")
    out("")
    started = anyio.current_time()
    approvals = _Approvals()
    listeners: list[Listener] = [approvals] if viewer else [printer(out), approvals]
    host = Host(team, home=scratch / "home", grace=10.0, listeners=listeners)
    quiet = False
    with approvals.send, approvals.receive:
        async with anyio.create_task_group() as tg:
            await tg.start(host.serve)
            await anyio.to_thread.run_sync(
                _submit, team.hostdb_path, Input(panel="producer", text=request)
            )
            if viewer:
                stop = anyio.Event()
                task_status.started(stop.set)
                await stop.wait()
                quiet = await host.quiet()
            else:
                async with anyio.create_task_group() as helpers:
                    helpers.start_soon(_answer_yes, approvals.receive, team.hostdb_path, out)
                    with anyio.move_on_after(limit):
                        quiet = await _until_quiet(host, quiet_for)
                    helpers.cancel_scope.cancel()
            host.request_stop()
    claimed = await _claimed(team.bus)
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
    asked = tuple(a.request for a in approvals.asked)
    answers = ", ".join(clean(a, 40) for a in approvals.answers) or "none"
    out(f"approvals asked of the operator: {len(asked)}; answered: {answers}")
    out(f"the watchdog halted the runaway engineer: {'yes' if halted else 'NO'}")
    out(f"messages left claimed on the bus: {claimed}")
    if viewer:
        out(f"the team was {'quiet' if quiet else 'still at work'} when the dashboard closed, "
            f"after {seconds:.1f}s")  # fmt: skip
    else:
        out(f"finished {'quietly' if quiet else 'at the timeout'} in {seconds:.1f}s")
    return DemoResult(quiet, halted, claimed, seconds, asked, tuple(approvals.answers))


def _submit(hostdb_path: Path, verb: Input | AnswerRequest) -> int:
    """Queue a verb in the host's control table, as any operator's command does."""
    conn = connect(hostdb_path)
    try:
        return submit_command(conn, verb)
    finally:
        conn.close()


async def _answer_yes(
    asked: MemoryObjectReceiveStream[ApprovalAsked], hostdb_path: Path, out: Callable[[str], None]
) -> None:
    """Alone, nobody is there to answer: the demo says yes to each question as it is asked,
    through the control table (not the host's own methods), so the story goes on at once
    instead of waiting out the approval timeout."""
    async for event in asked:
        out(f"demo answers approval {event.request} ({clean(event.tool, 60)} "
            f"{clean(event.target)}): yes")  # fmt: skip
        verb = AnswerRequest(panel=event.panel, request=event.request, answer=Answer.YES)
        await anyio.to_thread.run_sync(_submit, hostdb_path, verb)


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


async def _claimed(location: str) -> int:
    from peerbus import open_bus

    async with open_bus(location) as bus:
        stats = await bus.stats()
    return sum(r.leased for r in stats.recipients)
