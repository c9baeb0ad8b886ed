"""The session's lane across turns (scripted driver, real store and role doc in tmp_path):
the guard holds the lane of each turn's read; viewers read the role doc (`read_lane`)."""

from __future__ import annotations

import pytest

from runtime.instance.home import InstancePaths
from runtime.instance.lane import read_lane
from runtime.turn.driver import Done, DriverEvent, TextDelta, Usage
from runtime.turn.events import RoleWarning
from runtime.turn.open import open_session
from runtime.turn.scripted import ScriptedDriver

pytestmark = pytest.mark.anyio


def reply(text: str = "ok") -> list[DriverEvent]:
    return [TextDelta(text), Usage(10, 1), Done()]


async def test_a_vanished_role_doc_keeps_the_lane_of_its_last_good_text(
    anyio_backend: str, instance: InstancePaths
) -> None:
    instance.role.write_text("---\nwritable: [src/**]\n---\nROLE\n", encoding="utf-8")
    driver = ScriptedDriver([reply(), reply()])
    async with open_session("t1", driver=driver) as session:
        _ = [e async for e in session.turn("one")]
        assert session.guard.lane is not None and session.guard.lane.writable == ("src/**",)
        instance.role.unlink()
        events = [e async for e in session.turn("two")]
        assert any(isinstance(e, RoleWarning) for e in events)  # the missing doc is reported
        lane = session.guard.lane  # still enforced, never dropped
        assert lane is not None and lane.writable == ("src/**",)
    assert [r.system for r in driver.requests] == ["ROLE\n", "ROLE\n"]


async def test_removing_the_front_matter_removes_the_lane(
    anyio_backend: str, instance: InstancePaths
) -> None:
    instance.role.write_text("---\ntools: [Read]\n---\nROLE\n", encoding="utf-8")
    driver = ScriptedDriver([reply(), reply()])
    async with open_session("t1", driver=driver) as session:
        _ = [e async for e in session.turn("one")]
        instance.role.write_text("ROLE\n", encoding="utf-8")
        _ = [e async for e in session.turn("two")]
        assert session.guard.lane is None
    assert [r.system for r in driver.requests] == ["ROLE\n", "ROLE\n"]


def test_a_viewer_reads_the_lane_from_the_doc_and_a_bad_one_raises(
    instance: InstancePaths,
) -> None:
    from runtime.errors import LaneError

    instance.role.write_text("---\nwritable: [src/**]\n---\nROLE\n", encoding="utf-8")
    lane = read_lane(instance.role)
    assert lane is not None and lane.writable == ("src/**",)
    instance.role.write_text("---\ntools: [yes]\n---\nROLE\n", encoding="utf-8")
    with pytest.raises(LaneError, match=r":2: lane field 'tools\[0\]'"):
        read_lane(instance.role)
