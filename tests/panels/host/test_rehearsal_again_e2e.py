"""End to end: a rehearsal team brought up again behaves as the first time (issue 30).

The panel's window outlives its host, so the second host's first request re-sends the first
life's transcript; the rehearsal script starts over and must match only what is new.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import claude_agent_sdk
import pytest

from panels.host import Host
from panels.host.delivery.feed import OPERATOR, operator_route
from panels.team import TeamSpec, parse_team
from tests.panels.host.conftest import FAST, Events

CLI = Path(claude_agent_sdk.__file__).parent / "_bundled" / "claude"
pytestmark = [
    pytest.mark.e2e,
    pytest.mark.anyio,
    pytest.mark.skipif(not CLI.exists(), reason=f"the SDK's bundled CLI is not installed at {CLI}"),
]

SCRIPT = """
[panels.watch]
fallback_text = "Nothing new."

[[panels.watch.replies]]
when = { user_text_contains = "ALARM" }
text = "Sounding the alarm."
"""


@pytest.fixture
def anyio_backend() -> str:
    return "trio"  # the host's own backend; the CLI runs are too slow to repeat per backend


async def one_life(team: TeamSpec, home: Path) -> list[str]:
    """Bring the team up, give the panel a quiet input then an alarm, one turn each, and take
    the team down; what the panel said."""
    events = Events()
    host = Host(team, home=home, policy=FAST, listeners=[events], log_interval=0.01)
    async with anyio.create_task_group() as tg:
        await tg.start(host.serve)
        for turn, text in enumerate(["all quiet here", "ALARM in the lab"], start=1):
            await host.services.bus.submit(OPERATOR, operator_route("watch"), {"text": text})
            await events.wait("turn_ended", "watch", count=turn, within=90)
        host.request_stop()
    return [e.text for e in events.of("text", "watch")]


async def test_a_rehearsal_team_brought_up_again_matches_only_new_input(tmp_path: Path) -> None:
    (tmp_path / "script.toml").write_text(SCRIPT)
    (tmp_path / "work").mkdir()
    home = tmp_path / "mnemara-home"
    team = parse_team(
        '[team]\nname = "again"\nrehearsal = "script.toml"\nworkdir = "work"\n'
        '[[panels]]\nname = "watch"\n',
        source=tmp_path / "team.toml",
        home=home,
    )
    first = await one_life(team, home)
    assert first == ["Nothing new.", "Sounding the alarm."]
    # The second life's first request carries "ALARM in the lab" in its transcript: a script
    # that starts over must not take that old text for new input.
    second = await one_life(team, home)
    assert second == first
