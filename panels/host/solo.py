"""Solo mode as a team of one: the team that runs one instance under the host.

`solo_team(instance)` builds the one-panel team from the instance's own config. An instance
whose config carries the original's `peer_poll_*` fields keeps working against that foreign
`returns` table (compatibility mode: the table is left as it is, delivery state goes to a
sidecar): `peer_db_path` is the bus, `peer_poll_roles` the senders whose broadcasts it takes,
`peer_poll_batch` one batch or one message per turn, `peer_poll_silent_types` the noise the
bus acks without a turn. The panel's recipient role is the instance name. There is no
polling interval: the host notices a new row within milliseconds, so the original's 30 s
`peer_poll_interval_seconds` (and its floor) no longer applies.

The host's own files (host.sqlite, the bus, host.pid) live in the instance's `host/`
directory, so a solo host and a team of the same name never share a folder. The face is the
line REPL (panels/repl/face.py, `mnemara run`).
"""

from __future__ import annotations

from pathlib import Path

from panels.team import BatchSettings, PanelSpec, TeamBudget, TeamSpec
from runtime.instance.config import load_config
from runtime.instance.home import InstancePaths
from runtime.sandbox.settings import Mode, SandboxSettings, foreign_bus_files

HOST_DIR = "host"


def solo_state_dir(instance: str, home: Path | None = None) -> Path | None:
    """Where the solo host of `instance` keeps its files; None for a name that is not one."""
    from runtime.errors import InvalidInstanceNameError

    try:
        return InstancePaths.for_name(instance, home).root / HOST_DIR
    except InvalidInstanceNameError:
        return None


def solo_team(
    instance: str,
    *,
    home: Path | None = None,
    cwd: Path | None = None,
    replay_backlog: bool = False,
    sandbox: Mode = "auto",
) -> TeamSpec:
    paths = InstancePaths.for_name(instance, home).require()
    config = load_config(paths.config)
    state_dir = paths.root / HOST_DIR
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
        budget_overrides={},  # the instance's own limits and sentinel switch
        sentinel_overrides={},
        runtime_sentinel=None,
        policy=(),
    )
    return TeamSpec(
        name=instance,
        source=None,
        state_dir=state_dir,
        bus=str(Path(config.peer_db_path).expanduser() if foreign else state_dir / "bus.sqlite"),
        bus_is_default=not foreign,
        workdir=cwd or Path.cwd(),
        rehearsal=None,  # `run --rehearsal` serves the script itself (panels/cli/rehearse.py)
        max_concurrent_turns=1,
        digest_interval=3600.0,
        approval_timeout=600.0,
        runaway_tool_calls=1_000,
        budget=TeamBudget(),
        panels=(panel,),
        silent_types=tuple(config.peer_poll_silent_types) if foreign else None,
        take_over_original=foreign,
        replay_backlog=replay_backlog,
        # A foreign peer table is hidden from the tools: a command that wrote it could forge
        # a sender. The role doc is read-only inside: its front matter narrows the lane.
        sandbox=SandboxSettings(
            mode=sandbox,
            masked=foreign_bus_files(config.peer_db_path if foreign else None),
            read_only=(Path(config.role_doc_path),) if config.role_doc_path else (),
        ),
    )
