"""Which model driver each panel gets: the Claude Code CLI, live or against the rehearsal model.

With a rehearsal script in the team file, every panel's CLI is pointed at the host's own
loopback rehearsal server (`/p/<panel>`), with a dummy key, an empty HOME of its own and
the switches that keep it off the network, so a whole team runs offline. Every CLI, live or
rehearsal, also carries the host's marker (orphans.py), so a later life can find it.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from panels.host.services import DriverFactory
from panels.team import PanelSpec
from runtime.rehearsal.env import rehearsal_env
from runtime.turn.driver import AgentDriver

if TYPE_CHECKING:
    from runtime.sandbox import Sandbox


def claude_drivers(
    *,
    rehearsal_url: str | None = None,
    state_dir: Path | None = None,
    marker: Mapping[str, str] | None = None,
    sandbox: Sandbox | None = None,
    spares: int = 0,
) -> DriverFactory:
    """A factory of `ClaudeDriver`s; with `rehearsal_url`, aimed at the rehearsal model.

    `marker` (orphans.marker_env) is added to every CLI's environment, a warm spare's too;
    with `sandbox`, every turn's CLI runs inside it; without, in a session of its own, by a
    launcher kept in `state_dir`/cli. `spares`: how many warm spares the
    drivers of this factory (one host) may keep alive at once (runtime/claude/pool.py).
    """
    from runtime.claude import ClaudeDriver
    from runtime.claude.bundled import own_session_cli
    from runtime.claude.pool import SparePool

    mark = dict(marker or {})
    pool: SparePool[ClaudeDriver] = SparePool(spares)
    # Unconfined, each CLI runs in a session of its own, out of reach of a Ctrl-C meant for
    # the host (bundled.py); a sandboxed one is already.
    own = own_session_cli(state_dir / "cli") if sandbox is None and state_dir else None
    cli = None if own is None else str(own)

    def make(spec: PanelSpec) -> AgentDriver:
        if rehearsal_url is None:
            return ClaudeDriver(cli_path=cli, env=mark, sandbox=sandbox, pool=pool)
        home = (state_dir or Path.cwd()) / "cli-home" / spec.name
        url = f"{rehearsal_url}/p/{spec.name}"
        env = {**rehearsal_env(url, home, retries=False), **mark}
        return ClaudeDriver(cli_path=cli, env=env, sandbox=sandbox, pool=pool)

    return make
