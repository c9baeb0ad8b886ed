"""A role doc a panel is switched to mid-run (`/role PATH`, the SetRole verb) is guarded as the
one it started with: its own policy refuses a tool that writes it, and every panel's next
sandbox keeps it read-only. Before, both knew only the role docs of the host's start, so
after a switch the panel could rewrite its own instructions (and widen its lane), and a
peer could steer it. A real host, real sandboxed CLIs, the rehearsal model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, cast

import anyio
import pytest

from panels.host.turns.confine import team_sandbox
from panels.host.turns.drivers import claude_drivers
from panels.hostdb import connect, submit_command
from panels.hostdb.verbs import Input, SetRole
from runtime.rehearsal import open_rehearsal_server, parse_script
from tests.panels.host.conftest import make_team, panels
from tests.panels.host.test_lifecycle import CLI, LINUX

ORIGINAL = "# Role\nYou are the new role. Keep to it.\n"

pytestmark = [
    LINUX,
    pytest.mark.e2e,
    pytest.mark.skipif(not CLI.exists(), reason=f"the SDK's bundled CLI is absent ({CLI})"),
]


def script(role: Path) -> str:
    writes = f"""
[[panels.{{name}}.replies]]
when = {{{{ user_text_contains = "rewrite" }}}}
content = [
  {{{{ tool_use = "Bash", input = {{{{ command = "echo taken >> {role}" }}}} }}}},
  {{{{ tool_use = "Write", input = {{{{ file_path = "{role}", content = "# taken" }}}} }}}},
]

[[panels.{{name}}.replies]]
when = {{{{ tool_result_contains = "" }}}}
text = "tried"
"""
    return "".join(f'[panels.{n}]\nfallback_text = "ok"\n' + writes.format(name=n) for n in "ab")


def tool_results(server: Any, panel: str) -> str:
    """Every tool result the panel's CLI sent back to the model, as one text."""
    found = []
    for record in server.requests(panel):
        for message in record.body.get("messages", []):
            content = message.get("content")
            if isinstance(content, list):
                found += [json.dumps(b) for b in content if b.get("type") == "tool_result"]
    return "\n".join(found)


@pytest.mark.parametrize("anyio_backend", ["trio"])
async def test_a_role_doc_switched_to_mid_run_is_guarded_from_the_panel_and_its_peers(
    anyio_backend: str, tmp_path: Path, start_host: Any
) -> None:
    team = make_team(tmp_path, panels("a", "b"), extra='sandbox = "required"')
    role = team.workdir / "new.md"
    role.write_text(ORIGINAL)
    sandbox, _ = team_sandbox(team, team.state_dir.parents[1])
    assert sandbox is not None
    async with open_rehearsal_server(parse_script(script(role))) as server:
        made = claude_drivers(rehearsal_url=server.base_url, state_dir=team.state_dir,
                              sandbox=sandbox)  # fmt: skip
        drivers = {spec.name: made(spec) for spec in team.panels}
        async with start_host(team, cast(dict[str, Any], drivers)) as (_, events, _):
            viewer = connect(team.hostdb_path)
            submit_command(viewer, SetRole(panel="a", path=str(role)))
            with anyio.fail_after(60):
                (applied,) = await events.wait("command", "a", where=lambda e: e.verb == "role")
            assert applied.ok, applied.outcome
            for panel in "ab":
                submit_command(viewer, Input(panel=panel, text="rewrite the role doc"))
                with anyio.fail_after(120):
                    await events.wait("turn_ended", panel)
            viewer.close()
    assert role.read_text() == ORIGINAL
    own = tool_results(server, "a")
    assert own.count("is a role doc the panel reads every turn") == 2, own  # Bash and Write
    peer = tool_results(server, "b")
    assert "Read-only file system" in peer, peer  # its Bash ran, in a sandbox that kept it
