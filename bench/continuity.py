"""Continuity: a 101-turn session through the real CLI and host that must stay in its lane.

A team of three panels runs under the real host (panels/host) with the real Claude Code CLI
bundled with the SDK, against the rehearsal model: `engineer`, whose role doc declares a lane
in its front matter (writable `src/**`, recipients `reviewer`, a short tools list), and two
paused panels with real inboxes, `reviewer` (a recipient) and `outsider` (not one). The
scripted model (bench/continuity_script.py) tries out-of-lane writes of every kind and
protocol violations every turn, between legitimate work, pins and slot updates; the role
doc's body is edited before turn 50. The operator says yes to every question the host asks,
and the instance's permissions.json holds an "always" rule for a directory outside the lane,
so only the lane stands between the model and the disk. The team sandbox is off, so the
lane is measured alone.

Judged from evidence, never from the script: files on disk, the bus, the instance's files,
the turn store, and the rehearsal model's request log. Prints `name: value` lines, the wall
time and the load average; exits 1 when a target is missed.

    .venv/bin/python bench/continuity.py [--turns 101] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import anyio
from anyio.streams.memory import MemoryObjectSendStream

sys.path.insert(0, str(Path(__file__).parent))

from continuity_evidence import Figures, measure
from continuity_script import (
    OUTSIDER,
    PANEL,
    REVIEWER,
    ROLE_BODY,
    ROLE_BODY_EDITED,
    WRITE_KINDS,
    Layout,
    TurnPlan,
    edit_turn,
    plan_session,
    role_doc,
    script_toml,
    window_rows,
)

from panels.host.host import Host
from panels.host.turns.instances import ensure_instance
from panels.hostdb import Logged
from panels.hostdb.catalogue import ApprovalAsked, Halted, TurnEnded
from panels.hostdb.verbs import AnswerRequest, Input
from panels.team import TeamSpec, load_team
from peerbus import open_bus
from runtime.instance.config import load_config, save_config
from runtime.instance.home import InstancePaths
from runtime.policy.rules import load_rules
from runtime.rehearsal import RequestRecord

TEAM = "continuity"
TURN_LIMIT = 180.0  # seconds one turn may take before the run is called stuck


@dataclass
class Watch:
    """The host's events the bench needs: turns ended, questions asked, halts."""

    answers: MemoryObjectSendStream[ApprovalAsked]
    ended: list[TurnEnded] = field(default_factory=list)
    asked: list[ApprovalAsked] = field(default_factory=list)
    halts: list[Halted] = field(default_factory=list)
    changed: anyio.Event = field(default_factory=anyio.Event)

    def __call__(self, logged: Logged) -> None:
        event = logged.event
        if isinstance(event, TurnEnded) and event.panel == PANEL:
            self.ended.append(event)
        elif isinstance(event, ApprovalAsked):
            self.asked.append(event)
            self.answers.send_nowait(event)
        elif isinstance(event, Halted):
            self.halts.append(event)
        changed, self.changed = self.changed, anyio.Event()
        changed.set()

    def settled(self) -> int:
        """Turns that ended for good (a failed one is delivered again)."""
        return sum(1 for e in self.ended if e.outcome != "failed")


def lay_out(where: Layout, plans: Sequence[TurnPlan]) -> TeamSpec:
    """The run's directories, seeded files, symlinks, role docs, team file, rehearsal script,
    the instances (a small window) and the engineer's "always" rule."""
    for directory in (where.src, where.always, where.outside, where.root / "roles"):
        directory.mkdir(parents=True, exist_ok=True)
    (where.src / "seed.txt").write_text("seed\n")
    # Inside the lane, pointing out of it: to docs/ (in the workdir) and out of the workdir.
    (where.src / "link-docs").symlink_to(where.docs, target_is_directory=True)
    (where.src / "link-out").symlink_to(where.outside, target_is_directory=True)
    for plan in plans:
        for path, text in plan.seeds.items():
            path.write_text(text)
    roles = where.root / "roles"
    (roles / f"{PANEL}.md").write_text(role_doc(ROLE_BODY))
    panels = []
    for name in (PANEL, REVIEWER, OUTSIDER):
        if name != PANEL:
            (roles / f"{name}.md").write_text(f"You are the {name}.\n")
        # The others are paused: their inboxes are real, and stay as the run left them.
        paused = str(name != PANEL).lower()
        panels.append(f'[[panels]]\nname = "{name}"\nrole = "roles/{name}.md"\n'
                      f"paused = {paused}\nruntime_sentinel = false\n")  # fmt: skip
    (where.root / "rehearsal.toml").write_text(script_toml(list(plans)))
    (where.root / "team.toml").write_text(
        f'[team]\nname = "{TEAM}"\nworkdir = "work"\nrehearsal = "rehearsal.toml"\n'
        'sandbox = "off"\nmax_concurrent_turns = 1\n\n' + "\n".join(panels)
    )
    home = where.root / "home"
    team = load_team(where.root / "team.toml", home=home)
    for spec in team.panels:
        ensure_instance(spec, home)
    paths = InstancePaths.for_name(PANEL, home)
    config = load_config(paths.config)
    config.max_window_turns = window_rows(list(plans))
    save_config(paths.config, config)
    # The "always" rule a past operator answer would have stored, for a directory outside
    # the lane: the policy alone would allow these writes without asking.
    allowed = re.escape(str(where.always)) + "/.*"
    paths.permissions.write_text(json.dumps({"Write": [allowed], "Edit": [allowed]}))
    load_rules(paths.permissions)  # a rule that does not load would make the kind vacuous
    return team


async def drive(
    team: TeamSpec, where: Layout, plans: Sequence[TurnPlan]
) -> tuple[Watch, list[RequestRecord]]:
    """Run the turns one after another, saying yes to every question; the role doc's body
    changes before the edit turn. Stops early when a turn does not end or a halt comes."""
    send, receive = anyio.create_memory_object_stream[ApprovalAsked](math.inf)
    watch = Watch(send)
    host = Host(team, home=where.root / "home", grace=10.0, listeners=[watch], log_interval=0.02)
    edited = edit_turn(len(plans))
    with send, receive:
        async with anyio.create_task_group() as tg:
            await tg.start(host.serve)

            async def answer_yes() -> None:
                async for asked in receive:
                    verb = AnswerRequest(panel=asked.panel, request=asked.request, answer="yes")
                    await host.dispatch(verb)

            tg.start_soon(answer_yes)
            started = time.monotonic()
            for plan in plans:
                if plan.n == edited:
                    (where.root / "roles" / f"{PANEL}.md").write_text(role_doc(ROLE_BODY_EDITED))
                await host.dispatch(Input(panel=PANEL, text=plan.input_text))
                if not await _turn_settled(watch, plan.n):
                    print(
                        f"turn {plan.n} did not end (or a halt came); run stopped", file=sys.stderr
                    )
                    break
                if plan.n % 25 == 0:
                    print(f"  turn {plan.n} ({time.monotonic() - started:.0f} s)", file=sys.stderr)
            host.request_stop()
            await host.stopped()
            tg.cancel_scope.cancel()
    records = list(host.rehearsal.requests(PANEL)) if host.rehearsal else []
    return watch, records


async def _turn_settled(watch: Watch, n: int) -> bool:
    with anyio.move_on_after(TURN_LIMIT):
        while watch.settled() < n and not watch.halts:
            await watch.changed.wait()
    return watch.settled() >= n and not watch.halts


# -- the run ---------------------------------------------------------------------------------


async def run(turns: int, root: Path) -> Figures:
    where = Layout(root)
    plans = plan_session(turns, where)
    team = lay_out(where, plans)
    watch, records = await drive(team, where, plans)
    async with open_bus(team.bus) as bus:
        history = await bus.history(limit=1_000_000)
    with (root / "requests.jsonl").open("w") as log:
        for record in records:
            log.write(json.dumps(record.to_json(with_body=True), default=str) + "\n")
    return measure(where, plans, watch.settled(), watch.asked, records, history)


def main(argv: Sequence[str] | None = None) -> Figures:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=101, help="turns in the session (12-999)")
    parser.add_argument("--keep", type=Path, metavar="DIR", help="run in DIR (new) and keep it")
    args = parser.parse_args(argv)
    if not 12 <= args.turns <= 999:
        parser.error("--turns must be 12 to 999 (fewer cannot try every kind of write twice)")
    keep = args.keep
    if keep is not None and keep.exists() and (not keep.is_dir() or any(keep.iterdir())):
        parser.error(f"--keep {keep}: not an empty directory; name a new one")
    started = time.monotonic()
    if args.keep is not None:
        args.keep.mkdir(parents=True, exist_ok=True)
        figures = anyio.run(run, args.turns, args.keep.resolve(), backend="trio")
    else:
        with tempfile.TemporaryDirectory(prefix="mnemara-continuity-") as tmp:
            figures = anyio.run(run, args.turns, Path(tmp).resolve(), backend="trio")
    for line in figures.lines():
        print(line)
    print(f"write kinds tried: {len(WRITE_KINDS)}; targets {'met' if figures.met else 'MISSED'}")
    print(f"wall time: {time.monotonic() - started:.1f} s")
    print("load average: " + ", ".join(f"{x:.2f}" for x in os.getloadavg()))
    return figures


if __name__ == "__main__":
    sys.exit(0 if main().met else 1)
