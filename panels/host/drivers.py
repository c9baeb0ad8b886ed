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

REHEARSAL_KEY = "sk-ant-rehearsal"


def rehearsal_env(base_url: str, cli_home: Path) -> dict[str, str]:
    cli_home.mkdir(parents=True, exist_ok=True)
    return {
        "ANTHROPIC_BASE_URL": base_url,
        "ANTHROPIC_API_KEY": REHEARSAL_KEY,
        "HOME": str(cli_home),
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_AUTOUPDATER": "1",
        # A failed request is final at once; the host's restart policy does the retrying.
        "CLAUDE_CODE_MAX_RETRIES": "0",
    }


def claude_drivers(
    *, rehearsal_url: str | None = None, state_dir: Path | None = None
) -> DriverFactory:
    """A factory of `ClaudeDriver`s; with `rehearsal_url`, aimed at the rehearsal model."""
    from runtime.claude import ClaudeDriver

    def make(spec: PanelSpec) -> AgentDriver:
        if rehearsal_url is None:
            return ClaudeDriver()
        home = (state_dir or Path.cwd()) / "cli-home" / spec.name
        return ClaudeDriver(env=rehearsal_env(f"{rehearsal_url}/p/{spec.name}", home))

    return make
