"""The host's `role` verb refuses text whose lane (front matter) cannot be read: the panel
would halt on it at its next turn. The dashboard's editor and the REPL's /role send it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from panels.hostdb.verbs import SetRole
from tests.panels.cli.test_lane_cli import BAD, LANE
from tests.panels.host.conftest import make_team, panels

pytestmark = pytest.mark.anyio


async def test_the_role_verb_refuses_text_whose_lane_cannot_be_read(
    anyio_backend: str, tmp_path: Path, start_host: Any
) -> None:
    (tmp_path / "role.md").write_text(LANE + "Body.\n", encoding="utf-8")
    team = make_team(tmp_path, panels("a") + 'role = "role.md"\n')
    async with start_host(team, {"a": []}) as (host, _, _):
        outcome = await host.dispatch(SetRole(panel="a", text=BAD))
        assert not outcome.ok and "not saved" in outcome.text and "tools[1]" in outcome.text
        outcome = await host.dispatch(SetRole(panel="a", text=LANE + "New body.\n"))
        assert outcome.ok, outcome.text
    assert (tmp_path / "role.md").read_text(encoding="utf-8") == LANE + "New body.\n"
