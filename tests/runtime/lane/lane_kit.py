"""What the lane tests share: a lane from front matter, a call, its verdict, a refusal's text."""

from __future__ import annotations

from pathlib import Path

from runtime.guard.lane import LaneVerdict, lane_verdict
from runtime.instance.lane import Lane, split_front_matter
from runtime.turn.driver import ToolCallRequest


def lane_of(text: str, source: str = "role.md") -> Lane:
    lane, _ = split_front_matter(f"---\n{text}\n---\n", source)
    assert lane is not None
    return lane


def call(name: str, **args: object) -> ToolCallRequest:
    return ToolCallRequest("t1", name, dict(args))


def verdict(lane: Lane, c: ToolCallRequest, work: Path, **kw: object) -> LaneVerdict | None:
    """The verdict with the home directory beside `work` (tests make `home/` there)."""
    return lane_verdict(lane, c, work, home=work.parent / "home", **kw)  # type: ignore[arg-type]


def refusal(v: LaneVerdict | None) -> str:
    """The message of a deny verdict (fails on anything else)."""
    assert v is not None and v.action == "deny", v
    return v.message
