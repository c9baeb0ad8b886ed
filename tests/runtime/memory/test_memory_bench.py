"""The memory bench (bench/memory.py) runs small and prints every figure: a smoke test.

No figure is checked against its target here (speed lives in the bench's output); what is
checked is that each figure line came out once with the load average, the import-cost lines
carry their verdict, and that LanceDB and onnxruntime said nothing on stderr.
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
    "import cost of runtime.turn.session": "target 0 ms",
    "import cost of runtime.memory": "target 0 ms",
    "embedder load": "",
    "indexing 40 atoms": "atoms/s",
    "search (10 queries": "target p50 < 20 ms",
}


@pytest.mark.slow
def test_the_small_bench_prints_every_figure_with_its_load_average() -> None:
    command = [sys.executable, "bench/memory.py", "--atoms", "40", "--queries", "10"]
    # Its own session, so a bench still running at the timeout goes with all its processes.
    bench = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, stdin=subprocess.DEVNULL,
                             start_new_session=True)  # fmt: skip
    try:
        stdout, stderr = bench.communicate(timeout=120)
    finally:
        if bench.poll() is None:
            os.killpg(bench.pid, signal.SIGKILL)
            bench.communicate()
    assert bench.returncode == 0, stdout + stderr[-3000:]
    assert stderr == "", stderr[-3000:]
    lines = stdout.splitlines()
    for figure, expected in FIGURES.items():
        found = [line for line in lines if line.startswith(figure)]
        assert len(found) == 1, (figure, stdout)
        assert expected in found[0] and "load " in found[0], found[0]
        if expected.startswith("target"):
            assert "PASS" in found[0] or "MISS" in found[0], found[0]
