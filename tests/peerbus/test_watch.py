"""The change detector under the waiter: inotify (or stat polling), pokes and the budget."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from peerbus import watch
from peerbus.watch import file_signature, watch_files, watched_paths


@pytest.fixture(params=["inotify", "polling"])
def mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "polling":
        monkeypatch.setattr(watch, "_LIBC", None)
    return str(request.param)


def test_a_write_to_a_watched_file_wakes_the_watcher(tmp_path: Path, mode: str) -> None:
    db = tmp_path / "bus.sqlite"
    db.write_bytes(b"x")
    paths = watched_paths(db, None)
    (tmp_path / "other.sqlite").write_bytes(b"")
    read_end, write_end = os.pipe()

    def commit() -> None:
        (tmp_path / "other.sqlite").write_bytes(b"noise")  # not ours: ignored
        with (tmp_path / "bus.sqlite-wal").open("ab") as wal:
            wal.write(b"frame")

    timer = threading.Timer(0.05, commit)
    timer.start()
    try:
        assert watch_files(paths, file_signature(paths), poll=0.01, budget=10, wake=read_end)
    finally:
        timer.join()
        os.close(read_end)
        os.close(write_end)


def test_a_poke_wakes_and_a_quiet_budget_times_out(tmp_path: Path, mode: str) -> None:
    db = tmp_path / "bus.sqlite"
    db.write_bytes(b"x")
    paths = watched_paths(db, None)
    read_end, write_end = os.pipe()
    try:
        assert not watch_files(paths, file_signature(paths), poll=0.01, budget=0.05, wake=read_end)
        os.write(write_end, b"!")
        assert watch_files(paths, file_signature(paths), poll=0.01, budget=10, wake=read_end)
    finally:
        os.close(read_end)
        os.close(write_end)


def test_a_change_before_the_watch_started_is_not_missed(tmp_path: Path, mode: str) -> None:
    db = tmp_path / "bus.sqlite"
    db.write_bytes(b"x")
    paths = watched_paths(db, None)
    before = file_signature(paths)
    db.write_bytes(b"xy")
    read_end, write_end = os.pipe()
    try:
        assert watch_files(paths, before, poll=0.01, budget=10, wake=read_end)
    finally:
        os.close(read_end)
        os.close(write_end)
