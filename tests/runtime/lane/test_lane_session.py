"""The session's lane across turns (scripted driver, real store and role doc in tmp_path)."""

from __future__ import annotations

import json

import pytest

from runtime.driver import Done, DriverEvent, TextDelta, Usage
from runtime.home import InstancePaths
from runtime.lane import LANE_META
from runtime.scripted import ScriptedDriver
from runtime.session import RoleWarning, open_session

pytestmark = pytest.mark.anyio


def reply(text: str = "ok") -> list[DriverEvent]:
    return [TextDelta(text), Usage(10, 1), Done()]


async def test_a_vanished_role_doc_keeps_the_lane_of_its_last_good_text(
    anyio_backend: str, instance: InstancePaths
) -> None:
    instance.role.write_text("---\nwritable: [src/**]\n---\nROLE\n", encoding="utf-8")
    driver = ScriptedDriver([reply(), reply()])
    async with open_session("t1", driver=driver) as session:
        assert session.lane is not None and session.lane.writable == ("src/**",)  # fresh read
        _ = [e async for e in session.turn("one")]
        instance.role.unlink()
        events = [e async for e in session.turn("two")]
        assert any(isinstance(e, RoleWarning) for e in events)  # the missing doc is reported
        assert session.lane is not None and session.lane.writable == ("src/**",)
        assert session.guard.lane == session.lane  # still enforced, never dropped
        shown = json.loads(await session.store.get_meta(LANE_META) or "{}")
    assert [r.system for r in driver.requests] == ["ROLE\n", "ROLE\n"]
    assert shown["writable"] == ["src/**"]


async def test_removing_the_front_matter_removes_the_lane(
    anyio_backend: str, instance: InstancePaths
) -> None:
    instance.role.write_text("---\ntools: [Read]\n---\nROLE\n", encoding="utf-8")
    driver = ScriptedDriver([reply(), reply()])
    async with open_session("t1", driver=driver) as session:
        _ = [e async for e in session.turn("one")]
        instance.role.write_text("ROLE\n", encoding="utf-8")
        _ = [e async for e in session.turn("two")]
        assert session.lane is None and session.guard.lane is None
        assert await session.store.get_meta(LANE_META) == ""
    assert [r.system for r in driver.requests] == ["ROLE\n", "ROLE\n"]


async def test_before_any_turn_the_lane_is_a_fresh_read_and_a_bad_one_raises(
    anyio_backend: str, instance: InstancePaths
) -> None:
    from runtime.errors import LaneError

    instance.role.write_text("---\ntools: [yes]\n---\nROLE\n", encoding="utf-8")
    async with open_session("t1", driver=ScriptedDriver([])) as session:
        with pytest.raises(LaneError, match=r":2: lane field 'tools\[0\]'"):
            _ = session.lane
