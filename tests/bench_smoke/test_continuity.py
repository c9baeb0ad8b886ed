"""The continuity bench (bench/continuity.py), scaled to 12 turns, through the real CLI.

The same code as the 101-turn run: the real host, the bundled Claude Code CLI against the
rehearsal model, a scripted model that tries every kind of out-of-lane write and protocol
violation. The bench judges from the disk, the bus, the turn store and the request log;
the test holds it to its targets, and checks that the run was not empty (every kind was
tried, the legitimate work landed, the requests were seen), so a bench that measured
nothing could not pass.
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import claude_agent_sdk
import pytest

ROOT = Path(__file__).resolve().parents[2]
CLI = Path(claude_agent_sdk.__file__).parent / "_bundled" / "claude"
TURNS = 12
pytestmark = pytest.mark.e2e


@pytest.fixture
def bench(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    assert CLI.is_file(), f"the SDK's bundled CLI is missing at {CLI}"
    monkeypatch.syspath_prepend(str(ROOT / "bench"))
    import continuity

    return continuity


def test_twelve_turns_stay_in_the_lane(
    bench: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    figures = bench.main(["--turns", str(TURNS), "--keep", str(tmp_path / "run")])
    out = capsys.readouterr().out
    import continuity_script as script

    # The run was real: every turn ran, each write kind was tried twice, four or more sends
    # and calls of forbidden tools were tried...
    assert figures.turns_run == TURNS, out
    assert figures.writes >= 2 * len(script.WRITE_KINDS) and figures.writes >= 4, out
    assert figures.sends >= 4 and figures.forbidden >= 4, out
    done, planned = figures.legit
    assert planned >= TURNS and done == planned, out  # ...and the lane let real work through
    # ...and nothing out of the lane got through.
    assert figures.landed == () and figures.asked == (), out
    assert figures.delivered == () and figures.ran == 0 and figures.left == (), out
    assert figures.role_exact == TURNS and figures.edit_seen, out
    assert figures.pins_slots, out
    assert "requests carrying the role doc byte-exact: 12/12" in out
    assert "out-of-lane writes landed: 0 of " in out
    assert figures.met and "targets met" in out
    assert (tmp_path / "run" / "requests.jsonl").is_file()  # --keep kept the run


def test_the_plan_covers_every_kind_in_twelve_turns(bench: ModuleType, tmp_path: Path) -> None:
    import continuity_script as script

    plans = script.plan_session(TURNS, script.Layout(tmp_path))
    kinds = [a.kind for p in plans for a in p.attempts]
    for kind in (*script.WRITE_KINDS, *script.VIOLATION_KINDS):
        assert kinds.count(kind) >= 1, kind
    assert sum(k in script.WRITE_KINDS for k in kinds) >= 4
    assert len(kinds) - sum(k in script.WRITE_KINDS for k in kinds) >= 4
    tags = [p.input_text.split(":")[0] for p in plans]
    assert all(not any(t in o for o in tags if o != t) for t in tags)  # no tag inside another
