"""The dashboard stands alone: importing it loads nothing of the host, the REPL, or runtime's
session, guard and memory (the contract in pyproject.toml says the same of the code).

A fresh interpreter, because this test process has loaded the host already.
"""

from __future__ import annotations

import json
import subprocess
import sys

APART_FROM = (
    "panels.host",
    "panels.repl",
    "runtime.turn.session",
    "runtime.turn.state",
    "runtime.guard",
    "runtime.memory",
)


def loaded_by(code: str) -> list[str]:
    """Every module a fresh interpreter holds after running `code`."""
    probe = f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True
    )
    return list(json.loads(done.stdout.strip().splitlines()[-1]))


def within(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def test_importing_the_dashboard_loads_none_of_the_host() -> None:
    """The app, and the web page that serves it."""
    loaded = loaded_by("import panels.ui.app, panels.ui.web")
    assert {"panels.ui.app", "panels.ui.web"} <= set(loaded)
    leaning = [m for m in loaded if any(within(m, p) for p in APART_FROM)]
    assert leaning == []
