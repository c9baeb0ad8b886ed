"""Whether bubblewrap is here and can build a sandbox on this machine, asked once per process.

Finding `bwrap` on PATH is not enough: containers and hardened kernels can forbid the
namespaces it needs. So the probe runs the smallest sandbox a turn would use (no network, own
process ids, all capabilities dropped) and keeps the answer; then one inside it, as each
command's isolation (isolate.py) needs, which some kernels and policies forbid. A temporary
folder mounted noexec cannot run a turn's launcher, so it counts as no sandbox too.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass

PROBE_TIMEOUT_S = 10.0
INSTALL_HINT = "install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap)"


@dataclass(frozen=True)
class Support:
    bwrap: str | None  # the executable, when it works
    reason: str  # why not, when it does not ("" when it does)
    # Whether a sandbox can hold a nested one, which keeps commands away from the CLI
    # (isolate.py); why not, when it cannot.
    nested: bool = False
    nested_reason: str = ""

    @property
    def available(self) -> bool:
        return self.bwrap is not None


def probe() -> Support:
    """The answer for the `bwrap` on PATH (cached per executable: it does not change under
    a running host, and a turn must not pay for a probe), and for the temporary folder,
    where each turn's launcher is written and run (launch.py)."""
    support = check(shutil.which("bwrap"))
    if support.bwrap is None:
        return support
    try:
        folder = tempfile.gettempdir()
        runs = not os.statvfs(folder).f_flag & os.ST_NOEXEC
    except OSError as exc:  # no usable temporary folder at all
        return Support(None, f"no temporary folder for the sandbox's launcher: {exc}")
    if not runs:
        return Support(None, f"the temporary folder {folder} is mounted noexec, so a "
                       "sandbox's launcher cannot run there; set TMPDIR to a folder where "
                       "programs can run")  # fmt: skip
    return support


@functools.cache
def check(bwrap: str | None) -> Support:
    if bwrap is None:
        return Support(None, f"bubblewrap (bwrap) is not installed; {INSTALL_HINT}")
    args = [bwrap, "--ro-bind", "/", "/", "--unshare-net", "--unshare-pid", "--cap-drop", "ALL"]
    try:
        done = subprocess.run(
            [*args, "--die-with-parent", "true"],
            capture_output=True,
            timeout=PROBE_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Support(None, f"{bwrap} could not be run: {exc}")
    if done.returncode != 0:
        return Support(None, f"{bwrap} cannot create a sandbox here: {_said(done)}")
    nested = _nested(bwrap, args)
    return Support(bwrap, "", nested=not nested, nested_reason=nested)


def _nested(bwrap: str, outer: list[str]) -> str:
    """Why a sandbox cannot start a nested one here, as isolate.py's prefix does ("" when it
    can). A root host's sandbox runs as a user of its own, as plan.py makes it."""
    me = ["--unshare-user", "--uid", "59999", "--gid", "59999"] if os.getuid() == 0 else []
    inner = [bwrap, "--unshare-user", "--unshare-net", "--dev-bind", "/", "/", "true"]
    try:
        done = subprocess.run(
            [*outer, *me, "--proc", "/proc", "--dev", "/dev", "--die-with-parent", *inner],
            capture_output=True,
            timeout=PROBE_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{exc}"
    return "" if done.returncode == 0 else _said(done)


def _said(done: subprocess.CompletedProcess[bytes]) -> str:
    said = done.stderr.decode("utf-8", "replace").strip().splitlines()
    return said[-1] if said else f"exit status {done.returncode}"
