"""Python code run where a fresh tmpfs mounted noexec sits at a folder: in a mount namespace
of its own (`unshare --mount`), so nothing outside sees the mount. Root only."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ROOT_ONLY = pytest.mark.skipif(os.getuid() != 0, reason="mounts a file system: root only")


def run_on_noexec(mount: Path, code: str) -> str:
    """What `code` printed, run by this Python with `mount` (made here) a noexec tmpfs and
    TMPDIR pointing at it."""
    mount.mkdir(exist_ok=True)
    script = 'mount -t tmpfs -o noexec none "$1" && TMPDIR="$1" exec "$2" -c "$3"'
    done = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh",
         str(mount), sys.executable, code],
        capture_output=True, text=True, timeout=60, cwd=ROOT,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout
