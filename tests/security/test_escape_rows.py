"""The escape suite: every way out in bench/escapes.py, through the real CLI in the sandbox,
as the user running the tests and, when that is root, as `nobody` (bubblewrap builds its
namespaces differently for each). The same probe run unconfined is the control: there most
attempts land, so a held attempt is the sandbox's doing, not a broken probe.
"""

from __future__ import annotations

import os
import pwd
from pathlib import Path
from types import ModuleType

import pytest

from runtime.sandbox import probe

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
AT_LEAST = 25


@pytest.fixture
def escapes(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    assert probe().available, probe().reason
    monkeypatch.syspath_prepend(str(ROOT / "bench"))
    monkeypatch.setenv("HOME", os.environ.get("HOME", "/root"))  # restored after the run
    for name in list(os.environ):
        if name.startswith("ANTHROPIC_"):
            monkeypatch.delenv(name)
    import escapes as bench

    return bench


def landed(found: list) -> list[str]:  # type: ignore[type-arg]
    return [f"{o.name}: {o.said}" for o in found if o.landed]


def test_no_escape_lands_for_the_user_running_the_tests(
    escapes: ModuleType, tmp_path: Path
) -> None:
    found = escapes.run_all(tmp_path)
    assert len(found) >= AT_LEAST
    assert landed(found) == []


def test_without_the_sandbox_the_same_attempts_land(escapes: ModuleType, tmp_path: Path) -> None:
    found = escapes.run_all(tmp_path, confined=False)
    through = landed(found)
    assert len(through) >= 20, through  # the files, the network, the CLI's process
    names = {t.split(":")[0] for t in through}
    assert {"git_rename", "role_doc_parent_rename", "home_new_zshrc", "proc_environ"} <= names


@pytest.mark.skipif(os.getuid() != 0, reason="runs as another user from root only")
def test_no_escape_lands_for_an_unprivileged_user(escapes: ModuleType) -> None:
    pwd.getpwnam("nobody")
    try:
        found = escapes.as_user("nobody", True)
    except escapes.Unreachable as exc:  # this checkout, not the sandbox: say which
        pytest.skip(str(exc))
    assert len(found) >= AT_LEAST
    assert landed(found) == []
