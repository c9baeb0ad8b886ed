"""Solo mode as a team of one: an instance run by the host, with a plain line face.

`solo_team(instance)` builds the one-panel team from the instance's own config. An instance
whose config carries the original's `peer_poll_*` fields keeps working against that foreign
`returns` table (compatibility mode: the table is left as it is, delivery state goes to a
sidecar): `peer_db_path` is the bus, `peer_poll_roles` the senders whose broadcasts it takes,
`peer_poll_batch` one batch or one message per turn, `peer_poll_silent_types` the noise the
bus acks without a turn. The panel's recipient role is the instance name. There is no
polling interval: the host notices a new row within milliseconds, so the original's 30 s
`peer_poll_interval_seconds` (and its floor) no longer applies.

`run_solo_host` is the face: each line typed is operator input, a few slash commands steer
the host (`/inbox on|off`, `/halt`, `/resume`, `/approve [N]`, `/deny [N]`, `/quit`), and
what the panel does is printed as the event log's plain lines.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path

import anyio

from panels.host.account import printer
from panels.host.delivery import OPERATOR, operator_route
from panels.host.host import Host
from panels.host.services import DriverFactory
from panels.team import BatchSettings, PanelSpec, TeamBudget, TeamSpec
from runtime.config import load_config
from runtime.home import InstancePaths, mnemara_home
from runtime.limits_config import BudgetSettings, SentinelSettings

HELP = "type to talk; /inbox on|off, /halt, /resume, /approve [N], /deny [N], /quit"


def solo_team(
    instance: str,
    *,
    home: Path | None = None,
    cwd: Path | None = None,
    rehearsal: Path | None = None,
) -> TeamSpec:
    paths = InstancePaths.for_name(instance, home).require()
    config = load_config(paths.config)
    base = home or mnemara_home()
    state_dir = base / "_teams" / instance
    foreign = bool(config.peer_poll_enabled and config.peer_db_path)
    roles = tuple(r.strip() for r in config.peer_poll_roles.split(",") if r.strip())
    panel = PanelSpec(
        name=instance,
        instance=instance,
        role=None,  # the instance's own role doc
        model=None,
        kind="worker",
        listens_to=roles if foreign else None,
        paused=False,
        batch=BatchSettings(enabled=config.peer_poll_batch),
        budget=BudgetSettings(),
        sentinel=SentinelSettings(),
        policy=(),
    )
    return TeamSpec(
        name=instance,
        source=None,
        state_dir=state_dir,
        bus_path=Path(config.peer_db_path).expanduser() if foreign else state_dir / "bus.sqlite",
        bus_is_default=not foreign,
        workdir=cwd or Path.cwd(),
        rehearsal=rehearsal,
        max_concurrent_turns=1,
        digest_interval=3600.0,
        approval_timeout=600.0,
        runaway_tool_calls=1_000,
        budget=TeamBudget(),
        panels=(panel,),
        silent_types=tuple(config.peer_poll_silent_types) if foreign else None,
    )


async def run_solo_host(
    team: TeamSpec,
    lines: AsyncIterator[str],
    out: Callable[[str], None],
    *,
    drivers: DriverFactory | None = None,
    home: Path | None = None,
) -> None:
    """Run the one-panel team until `/quit` or the end of `lines`."""
    name = team.panels[0].name
    host = Host(
        team,
        drivers=drivers,
        home=home,
        listeners=[printer(out, skip=("host_ready", "panel_started"))],
    )
    async with anyio.create_task_group() as tg:
        await tg.start(host.serve)
        bus = host.services.bus
        if bus.notice:
            out(bus.notice)
        out(f"mnemara: {name} (a team of one; bus {team.bus_path}); {HELP}")
        async for raw in lines:
            line = raw.strip()
            if not line:
                continue
            if line == "/quit":
                break
            if line.startswith("/"):
                out(_slash(host, name, line))
                continue
            await bus.submit(OPERATOR, operator_route(name), {"type": "input", "text": line})
        host.request_stop()
        await host.stopped()
        tg.cancel_scope.cancel()


def _slash(host: Host, name: str, line: str) -> str:
    from panels.host.control import operator_halt
    from runtime.policy.approver import Answer

    runner = host.services.panels[name]
    verb, _, rest = line[1:].partition(" ")
    if verb == "inbox" and rest in ("on", "off"):
        runner.set_inbox(rest == "on")
        return f"inbox {rest}"
    if verb == "halt":
        runner.halt_now(operator_halt(rest or "halted by the operator", "operator"), by="operator")
        return "halted"
    if verb == "resume":
        runner.resume()
        return "resumed"
    if verb in ("approve", "deny"):
        approvals = host.services.approvals
        open_ids = approvals.pending(name)
        ident = int(rest) if rest.isdigit() else (open_ids[0] if len(open_ids) == 1 else None)
        if ident is None:
            return f"{len(open_ids)} open question(s): say which, e.g. /{verb} {open_ids[:1]}"
        answer = Answer.YES if verb == "approve" else Answer.NO
        return (
            f"request {ident}: {answer.value}"
            if approvals.answer(ident, answer)
            else "no such question"
        )
    return HELP
