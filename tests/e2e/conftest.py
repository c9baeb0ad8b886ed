"""The end-to-end rig: our session and ClaudeDriver, the real bundled CLI, the rehearsal model.

`rehearse(script)` starts a rehearsal server for one test and hands back a `Rig`: the CLI's
environment for the script's panel (`ANTHROPIC_BASE_URL` pointing at the server, a dummy key,
an empty CLI HOME), a `ClaudeDriver` built with it, a fresh instance whose role doc is on
disk, and a working directory inside the (test) home, so the policy's "home only" roots hold
it. Anything outside `rig.home` is outside the allowed area.

Every test here is skipped, with the reason, when the SDK's bundled CLI is absent; nothing
else is ever skipped.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import claude_agent_sdk
import pytest

from runtime.claude import ClaudeDriver
from runtime.instance.config import InstanceConfig, save_config
from runtime.instance.home import InstancePaths
from runtime.rehearsal import RehearsalServer, Script, open_rehearsal_server, parse_script
from runtime.sandbox import Sandbox, SandboxSettings, probe
from runtime.store import TurnStore
from runtime.turn.open import open_session
from runtime.turn.session import Session

BUNDLED_CLI = Path(claude_agent_sdk.__file__).parent / "_bundled" / "claude"
PANEL = "eng"
INSTANCE = "e2e"
ROLE_DOC = "# Role\nYou are the e2e panel. Answer briefly and use tools when asked.\n"
# Anything through which the CLI could find a real credential or a real model service.
CREDENTIAL_VARS = ("CLAUDE_CODE_OAUTH_TOKEN", "CLAUDE_CONFIG_DIR", "CLAUDE_CODE_USE_BEDROCK")
CREDENTIAL_VARS += ("CLAUDE_CODE_USE_VERTEX", "AWS_BEARER_TOKEN_BEDROCK")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    skip = pytest.mark.skip(reason=f"the SDK's bundled Claude Code CLI is absent ({BUNDLED_CLI})")
    for item in items:
        if here in Path(str(item.fspath)).parents and not BUNDLED_CLI.exists():
            item.add_marker(skip)


@dataclass(frozen=True)
class Rig:
    server: RehearsalServer
    env: dict[str, str]
    driver: ClaudeDriver
    paths: InstancePaths  # the instance `INSTANCE`, created with ROLE_DOC
    home: Path  # the test process's HOME: the policy's allowed root
    work: Path  # the session's cwd, inside `home`
    outside: Path  # a directory outside the allowed area

    def session(self, **options: Any) -> AbstractAsyncContextManager[Session]:
        """The instance's session on this rig's driver, in its working directory."""
        return open_session(INSTANCE, driver=self.driver, cwd=self.work, **options)

    def requests(self) -> list[dict[str, Any]]:
        """The bodies of the panel's conversation requests, in order."""
        return [
            dict(r.body) for r in self.server.requests(PANEL) if r.source != "structured-default"
        ]


Rehearse = Callable[..., AbstractAsyncContextManager[Rig]]


def cli_env(server: RehearsalServer, cli_home: Path, *, retries: int | None) -> dict[str, str]:
    env = {
        "ANTHROPIC_BASE_URL": server.base_url_for(PANEL),
        "ANTHROPIC_API_KEY": "sk-ant-rehearsal",
        "HOME": str(cli_home),
    }
    if retries is not None:
        # A failed call is final at once; the CLI would otherwise back off 0.5 s, 1 s, 2 s...
        env["CLAUDE_CODE_MAX_RETRIES"] = str(retries)
    return env


@pytest.fixture
def rehearse(tmp_path: Path, mnemara_home: Path, monkeypatch: pytest.MonkeyPatch) -> Rehearse:
    """`async with rehearse(script, retries=None, config=None, sandbox=None) as rig:` (see `Rig`).

    `script` is TOML text or a `Script`; its panel must be named `eng`. `config` replaces the
    instance's default config (the role doc path is filled in). With `sandbox`, the driver
    confines every turn with it (bubblewrap must work here: the test fails if it does not).
    """
    for name in list(os.environ):
        if name.startswith("ANTHROPIC_") or name in CREDENTIAL_VARS:
            monkeypatch.delenv(name)
    home = tmp_path / "home"
    work = home / "work"
    outside = tmp_path / "outside"
    cli_home = tmp_path / "cli-home"
    for directory in (work, outside, cli_home):
        directory.mkdir(parents=True)
    # The policy's roots are the process's home (Path.home() reads HOME).
    monkeypatch.setenv("HOME", str(home))

    @asynccontextmanager
    async def start(
        script: str | Script,
        *,
        retries: int | None = None,
        config: InstanceConfig | None = None,
        sandbox: SandboxSettings | None = None,
    ) -> AsyncIterator[Rig]:
        paths = InstancePaths.for_name(INSTANCE, mnemara_home)
        paths.root.mkdir()
        paths.role.write_text(ROLE_DOC, encoding="utf-8")
        config = (config or InstanceConfig()).model_copy(update={"role_doc_path": str(paths.role)})
        save_config(paths.config, config)
        TurnStore.open(paths.turns).close()
        parsed = parse_script(script) if isinstance(script, str) else script
        async with open_rehearsal_server(parsed) as server:
            env = cli_env(server, cli_home, retries=retries)
            confined = None
            if sandbox is not None:
                support = probe()
                assert support.bwrap is not None, support.reason
                confined = Sandbox(sandbox, support.bwrap, home, mnemara_home)
            driver = ClaudeDriver(env=env, sandbox=confined)
            yield Rig(server, env, driver, paths, home, work, outside)

    return start
