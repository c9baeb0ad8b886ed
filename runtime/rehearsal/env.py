"""The environment of a Claude Code CLI that talks to the rehearsal model, and to nothing else.

One place for it, used by `mnemara rehearse`, a host whose team names a rehearsal script, and
the benchmarks: the CLI gets the rehearsal server's URL and a dummy key, a throwaway HOME, the
switches that keep it off the network, and every variable cleared that could route a turn to
a real service (an OAuth token, Bedrock, Vertex, Foundry), so a rehearsal can never bill.
"""

from __future__ import annotations

from pathlib import Path

REHEARSAL_KEY = "sk-ant-rehearsal"
# Cleared in the CLI's environment (it inherits ours): each could route a turn elsewhere.
CLEARED_VARS = (
    "ANTHROPIC_AUTH_TOKEN",
    "CLAUDE_CODE_OAUTH_TOKEN",
    "CLAUDE_CODE_USE_BEDROCK",
    "CLAUDE_CODE_USE_VERTEX",
    "CLAUDE_CODE_USE_FOUNDRY",
)


def rehearsal_env(base_url: str, cli_home: Path, *, retries: bool = True) -> dict[str, str]:
    """The CLI environment for one panel of a rehearsal server. Without `retries` a failed
    request is final at once (a host's restart policy does the retrying)."""
    cli_home.mkdir(parents=True, exist_ok=True)
    env = dict.fromkeys(CLEARED_VARS, "")
    env.update(
        {
            "ANTHROPIC_BASE_URL": base_url,
            "ANTHROPIC_API_KEY": REHEARSAL_KEY,
            "HOME": str(cli_home),
            # Not cleared but pointed into the throwaway HOME: an empty value would make the
            # CLI write its config into the working directory.
            "CLAUDE_CONFIG_DIR": str(cli_home / ".claude"),
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_AUTOUPDATER": "1",
        }
    )
    if not retries:
        env["CLAUDE_CODE_MAX_RETRIES"] = "0"
    return env
