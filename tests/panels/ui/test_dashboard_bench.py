"""The dashboard bench (bench/dashboard.py) runs and prints every figure: a smoke test.

It runs `--quick`, with one-second phases, as a user would, in its own process. No figure is
checked against its target here (speed lives in the bench's output, never in a test's
assertion); what is checked is that each phase ran to its end, every figure line came out
with its target and the load average, and the exit status is 0 (it is 1 when an event written
was never shown, or the scrolled transcript lacks lines).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
FIGURES = {
    "idle CPU": "target < 2%",
    "lag at rest": "",
    "stream UI event loop lag": "target p99 < 50 ms",
    "stream message queue delay": "target p99 < 50 ms",
    "stream paint cost": "",
    "commit -> screen latency": "target p95 < 100 ms",
    "scroll load": "",
    "scroll steps": "target max < 100 ms",
}


@pytest.mark.slow
def test_the_quick_bench_prints_every_figure_with_its_load_average() -> None:
    # Its own session, so a bench still running at the timeout goes with all its processes.
    # One second of idle and of streaming: each figure is made and printed the same way as
    # over the quick run's three (figures are never judged here), 4 s sooner.
    command = [sys.executable, "bench/dashboard.py", "--quick", "--seconds", "1",
               "--idle-seconds", "1"]  # fmt: skip
    bench = subprocess.Popen(command, cwd=ROOT,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             stdin=subprocess.DEVNULL, start_new_session=True)  # fmt: skip
    try:
        stdout, stderr = bench.communicate(timeout=300)
    finally:
        if bench.poll() is None:
            os.killpg(bench.pid, signal.SIGKILL)
            bench.communicate()
    assert bench.returncode == 0, stdout + stderr[-3000:]
    lines = stdout.splitlines()
    for figure, target in FIGURES.items():
        found = [line for line in lines if line.startswith(figure)]
        assert len(found) == 1, (figure, stdout)
        assert target in found[0] and "load " in found[0], found[0]
        if target:
            assert "PASS" in found[0] or "MISS" in found[0], found[0]
    assert "0 never shown" in stdout
    assert "FAILED" not in stdout
