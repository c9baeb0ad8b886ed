"""Which model driver each panel gets: the Claude Code CLI, live or against the rehearsal model.

With a rehearsal script in the team file, every panel's CLI is pointed at the host's own
loopback rehearsal server (`/p/<panel>`), with a dummy key, an empty HOME of its own and
the switches that keep it off the network, so a whole team runs offline.
"""

from __future__ import annotations

from pathlib import Path

from panels.host.services import DriverFactory
from panels.team import PanelSpec
from runtime.driver import AgentDriver
from runtime.rehearsal.env import rehearsal_env


def claude_drivers(
    *, rehearsal_url: str | None = None, state_dir: Path | None = None
) -> DriverFactory:
    """A factory of `ClaudeDriver`s; with `rehearsal_url`, aimed at the rehearsal model."""
    from runtime.claude import ClaudeDriver

    def make(spec: PanelSpec) -> AgentDriver:
        if rehearsal_url is None:
            return ClaudeDriver()
        home = (state_dir or Path.cwd()) / "cli-home" / spec.name
        url = f"{rehearsal_url}/p/{spec.name}"
        return ClaudeDriver(env=rehearsal_env(url, home, retries=False))

    return make
