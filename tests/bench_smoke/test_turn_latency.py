"""The turn-latency bench (bench/turn_latency.py --quick): a real host, the bundled CLI on the
rehearsal model, sandboxed as a default team runs, with a warm spare. The figures depend on
the machine's load, so the test holds the bench to measuring: every line is there, with its
samples, the spare's idle cost is measured, every turn run with a spare ran on one, and the
target line is computed."""

from __future__ import annotations

import re
from pathlib import Path

import claude_agent_sdk
import pytest

ROOT = Path(__file__).resolve().parents[2]
CLI = Path(claude_agent_sdk.__file__).parent / "_bundled" / "claude"
pytestmark = pytest.mark.e2e


def test_quick_bench_measures_each_stage_and_the_spare(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert CLI.is_file(), f"the SDK's bundled CLI is missing at {CLI}"
    monkeypatch.syspath_prepend(str(ROOT / "bench"))
    monkeypatch.setenv("MNEMARA_HOME", "")  # the bench sets its own; restored after
    import turn_latency

    turn_latency.cli(["--quick", "--spares", "1"])
    out = capsys.readouterr().out
    for stage in ("input -> first request", "input -> turn started", "answer -> committed",
                  "answer -> on the dashboard's tail"):  # fmt: skip
        assert re.search(rf"{stage}: p50 \d+ ms, p95 \d+ ms \(n=2\) \(load ", out), out
    assert re.search(r"idle spares: [1-9]\d* processes, RSS \d+ MB in all, CPU [\d.]+ s/s", out)
    assert re.search(r"^target (met|missed): solo sandboxed .* \(warm_spares 1\)$", out, re.M)
    # The quick run's three turns without a spare, and with one: every turn on it.
    assert re.search(r"no spare: turns on a spare: 0 of 3 .*stale or dead: 0$", out, re.M), out
    assert re.search(r"warm_spares 1: turns on a spare: 3 of 3 .*stale or dead: 0$", out, re.M)
    assert re.search(r"^solo sandboxed, with a spare against without, .*: 0\.\d\dx ", out, re.M)
