"""The lane through the real bundled CLI and the rehearsal model: writes outside it never land.

The policy is set to allow Write and Bash outright, so without the lane every call below
would run; with `writable: ["src/**"]` in the role doc's front matter, a Write outside it, a
Bash redirection through `..` and a Write through a symlink are refused by the guard before
the CLI runs them (the files do not exist afterwards), while a Write inside the lane lands.
The system prompt the model service received is the role doc's body, front matter removed.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from runtime.errors import PanelHaltedError
from runtime.instance.config import InstanceConfig, ToolPolicy
from runtime.turn.driver import ToolResult
from runtime.turn.events import TurnCommitted
from tests.e2e.conftest import BUNDLED_CLI, ROLE_DOC, Rehearse, rehearse

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.anyio,
    pytest.mark.skipif(
        not BUNDLED_CLI.exists(), reason=f"the bundled CLI is absent ({BUNDLED_CLI})"
    ),
]
__all__ = ["rehearse"]  # the fixture, imported for this module

LANE = '---\nwritable: ["src/**"]\n---\n'
ALLOW_ALL = InstanceConfig(
    allowed_tools=(
        ToolPolicy(tool="Write", mode="allow"),
        ToolPolicy(tool="Bash", mode="allow"),
        ToolPolicy(tool="Read", mode="allow"),
    ),
    runtime_sentinel=False,
)


def script(direct: Path, via_link: Path, inside: Path) -> str:
    def write(path: Path) -> str:
        return f'{{ tool_use = "Write", input = {{ file_path = "{path}", content = "x" }} }}'

    bash = '{ tool_use = "Bash", input = { command = "echo x > ../outside.txt" } }'
    return f"""
[[panels.eng.replies]]
when = {{ user_text_contains = "try the lane" }}
content = [ {{ text = "Trying. " }}, {write(direct)}, {bash}, {write(via_link)}, {write(inside)} ]

[[panels.eng.replies]]
when = {{ tool_result_contains = "" }}
text = "Tried."
"""


async def test_writes_outside_the_lane_never_land(
    rehearse: Rehearse, anyio_backend: str, tmp_path: Path
) -> None:
    work = tmp_path / "home" / "work"  # the rig's working directory, inside its home
    direct = work.parent / "direct.txt"  # in the home (the policy's root), not in the lane
    elsewhere = work.parent / "elsewhere"
    via_link = work / "src" / "link" / "via-link.txt"
    inside = work / "src" / "inside.txt"
    async with rehearse(script(direct, via_link, inside), config=ALLOW_ALL) as rig:
        assert rig.work == work
        (rig.work / "src").mkdir()
        elsewhere.mkdir()
        (rig.work / "src" / "link").symlink_to(elsewhere)
        rig.paths.role.write_text(LANE + ROLE_DOC, encoding="utf-8")
        async with rig.session() as session:
            events = [e async for e in session.turn("please try the lane")]
        first = rig.requests()[0]

    assert not direct.exists()
    assert not (work.parent / "outside.txt").exists()
    assert not (elsewhere / "via-link.txt").exists() and list(elsewhere.iterdir()) == []
    assert inside.read_text() == "x"
    results = [e for e in events if isinstance(e, ToolResult)]
    refused = [r.content for r in results if r.is_error]
    assert len(results) == 4 and len(refused) == 3
    assert all("outside this panel's lane (writable: src/**" in r for r in refused)
    assert isinstance(events[-1], TurnCommitted)
    system = [block["text"] for block in first["system"]]
    assert ROLE_DOC in system and not any("writable" in text for text in system)


async def test_a_malformed_lane_halts_before_the_model_is_called(
    rehearse: Rehearse, anyio_backend: str
) -> None:
    async with rehearse("[panels.eng]\nfallback_text = 'Hi.'\n", config=ALLOW_ALL) as rig:
        rig.paths.role.write_text("---\nwritable:\n\t- src/**\n---\n" + ROLE_DOC)
        async with rig.session() as session:
            with pytest.raises(PanelHaltedError) as caught:
                _ = [e async for e in session.turn("hello")]
            assert await session.store.rows() == []
            halt = json.loads(await session.store.get_meta("halt") or "{}")
            rig.paths.role.write_text('---\nwritable: ["src/**"]\n---\n' + ROLE_DOC)
            await session.resume()
            events = [e async for e in session.turn("hello again")]
            lane = session.guard.lane
            assert lane is not None and lane.writable == ("src/**",)
        requests = rig.requests()
    assert f"{rig.paths.role}:3: lane front matter: indents with a tab" in str(caught.value)
    assert caught.value.record.source == "lane" and halt["source"] == "lane"
    assert isinstance(events[-1], TurnCommitted)
    assert len(requests) == 1  # the halted turn never reached the model service
    texts = json.dumps(requests[0]["messages"])
    assert "hello again" in texts and '"hello"' not in texts
