"""Replay never prints a negative zero: not in its lines, its JSON or what it writes."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from panels.cli.replay import describe, plan_json
from runtime.memory.duplicates import Conflict, Duplicate
from runtime.memory.figures import fixed, rounded
from runtime.memory.model import Atom
from runtime.memory.replay import ReplayPlan

TINY = -2.220446049250313e-16  # 1 - (a vector with itself), as floating point gets it


def test_a_tiny_negative_prints_as_zero() -> None:
    assert f"{TINY:.3f}" == "-0.000"  # the defect, as Python formats it
    assert fixed(TINY) == fixed(-0.0) == "0.000"
    assert fixed(-0.25) == "-0.250" and fixed(0.0126) == "0.013"
    assert str(rounded(TINY, 4)) == "0.0" and str(rounded(-0.0)) == "0.0"


def test_replays_lines_and_json_show_no_negative_zero() -> None:
    at = datetime(2026, 12, 7, tzinfo=UTC)
    one, two = (Atom(f"memory/2026-12-07.md#{i}", "note", "the same") for i in "ab")
    plan = ReplayPlan(
        at=at, since=at, days=7, threshold=3, atoms=2, pages=0, patterns=(),
        duplicates=(Duplicate(one.source, two.source, TINY),), archived_before=(), remarks=(),
        conflicts=(Conflict(one, two, -0.0, ("figures: 1 / 2",)),), read=3,
    )  # fmt: skip
    text = "\n".join(describe(plan, None, []))
    assert "distance 0.000" in text and "-0.0" not in text
    assert "-0.0" not in json.dumps(plan_json(plan, None, []))
