"""The sweep of sandbox directories whose host is gone (runtime/sandbox/leftovers.py)."""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from runtime.sandbox.gateway import LIFE_SOCKET, Gateway
from runtime.sandbox.leftovers import GATEWAY_DIR, SETTLE_S, WORK_PREFIX, sweep_leftovers


@pytest.fixture
def root() -> Iterator[Path]:
    # Short, as the real temporary folder is: a socket's path must fit in 108 bytes.
    made = Path(tempfile.mkdtemp(prefix="lo-", dir="/tmp"))
    yield made
    shutil.rmtree(made, ignore_errors=True)


def work_dir(root: Path, name: str, *, age: float) -> Path:
    work = root / f"{WORK_PREFIX}{name}"
    (work / GATEWAY_DIR).mkdir(parents=True)
    (work / "claude").write_text("#!/bin/sh\n")
    stamp = time.time() - age
    os.utime(work, (stamp, stamp))
    return work


def test_only_old_directories_with_no_gateway_listening_are_removed(root: Path) -> None:
    old = SETTLE_S + 5
    live = work_dir(root, "live", age=old)
    gateway = Gateway(live / GATEWAY_DIR, model=None, allowed=frozenset())
    dead = work_dir(root, "dead", age=old)
    closed = Gateway(dead / GATEWAY_DIR, model=None, allowed=frozenset())
    closed.close()  # its socket files stay, with no one listening: a host killed with -9
    assert (dead / GATEWAY_DIR / LIFE_SOCKET).exists()
    unopened = work_dir(root, "unopened", age=old)  # killed before its gateway was opened
    young = work_dir(root, "young", age=1)  # maybe a launcher whose gateway opens now
    other = root / "not-a-sandbox"
    other.mkdir()
    os.utime(other, (time.time() - old,) * 2)
    aside = root / "aside"
    aside.mkdir()
    linked = root / f"{WORK_PREFIX}link"
    linked.symlink_to(aside)
    try:
        removed = sweep_leftovers(root=root)
        assert sorted(removed) == sorted([dead, unopened])
        assert not dead.exists() and not unopened.exists()
        assert live.exists() and young.exists() and other.exists() and aside.exists()
        assert linked.is_symlink()
        # The probe did not break the live gateway: it still accepts its relay's tie.
        tie = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        tie.connect(str(live / GATEWAY_DIR / LIFE_SOCKET))
        tie.close()
    finally:
        gateway.close()
    # Once its gateway is closed, the live one is a leftover too; the young one not yet.
    assert sweep_leftovers(root=root) == [live]
    assert young.exists()


def test_a_missing_temporary_folder_sweeps_nothing(tmp_path: Path) -> None:
    assert sweep_leftovers(root=tmp_path / "gone") == []
