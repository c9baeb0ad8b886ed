"""The panel's permission policy, as its guard owns it: built here, and nowhere else.

`build_policy` makes the instance's `PolicyApprover` from its config, permissions.json and
the machine: the protected files, the team's databases and team file, the roots the file
tools may use, and, when the panel's tools run in a sandbox, what that sandbox contains
(runtime/policy/containment.py). Every session and every host life calls it; nothing else
constructs an approver or calls the policy's `decide` (an import-linter contract in
pyproject.toml), so no check can go around the guard.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from runtime.instance.config import InstanceConfig
from runtime.instance.debuglog import DebugLog
from runtime.instance.home import InstancePaths, mnemara_home
from runtime.policy.approver import PolicyApprover
from runtime.policy.asking import Asker, HeadlessAsker
from runtime.policy.context import Containment, PolicyContext
from runtime.policy.policy import PolicyState
from runtime.policy.rules import load_rules


def containment_for(driver: object, cwd: Path) -> Containment | None:
    """What the sandbox of `driver` contains for turns in `cwd`: a driver that confines its
    turns carries its `sandbox` (runtime/claude's ClaudeDriver); any other runs unconfined."""
    sandbox = getattr(driver, "sandbox", None)
    return None if sandbox is None else sandbox.containment(cwd)


def build_policy(
    paths: InstancePaths,
    config: InstanceConfig,
    *,
    cwd: Path,
    asker: Asker | None = None,
    home: Path | None = None,
    roots: Sequence[Path] = (),
    team_files: Sequence[Path] = (),
    team_file: Path | None = None,
    team_tools: frozenset[str] = frozenset(),
    containment: Containment | None = None,
) -> PolicyApprover:
    """The live policy: config rules, remembered rules, protected files, an asker.

    `roots` are directories the file tools may use besides the home (a team's working
    directory). `team_files` are the team's databases (its bus, foreign or not, and its host
    database): no tool may write them or their SQLite and peerbus siblings; the foreign bus
    the instance's own config names (`peer_db_path`) is added here, so a session outside a
    host guards it too. `team_file` is the team file the host was started from: no tool may
    write it either; `team_tools` are the tools its `[[panels.policy]]` entries name, which
    hold for a confined panel too. `containment` is what the panel's sandbox contains (None:
    its tools run unconfined). PATH is read here, once, as the tools will inherit it. Without
    an asker (headless), every `ask` verdict is denied with a message the model reads. A
    damaged permissions.json or pattern raises PolicyError: the session does not start.
    """
    remembered = load_rules(paths.permissions)
    state = PolicyState.from_config(config, remembered, path=paths.config, team_tools=team_tools)
    # The role doc steers the agent on every turn, so the agent may not rewrite it.
    role_doc = (Path(config.role_doc_path),) if config.role_doc_path else ()
    peer_db = (Path(config.peer_db_path).expanduser(),) if config.peer_db_path else ()
    home = home or Path.home()
    context = PolicyContext.build(
        cwd=cwd,
        home=home,
        home_only=config.file_tool_home_only,
        roots=(home, *roots) if roots else (),
        instance=paths,
        state_root=mnemara_home(),
        role_docs=role_doc,
        denied_writes=(*team_files, *peer_db),
        team_file=team_file,
        search_path=os.environ.get("PATH", ""),
        containment=containment,
    )
    return PolicyApprover(
        state,
        context,
        asker or HeadlessAsker(),
        rules_path=paths.permissions,
        log=DebugLog(paths.debug_log),
    )
