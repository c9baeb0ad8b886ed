"""The change detector under the waiter: inotify on the database's directory, file signatures."""

from __future__ import annotations

from pathlib import Path

from sqlitekit.watch import file_signature, touched, watch_directories, watched_paths


def test_a_write_to_a_watched_file_is_an_event_and_a_neighbour_is_not(tmp_path: Path) -> None:
    db = tmp_path / "bus.sqlite"
    db.write_bytes(b"x")
    paths = watched_paths(db, None)
    notify = watch_directories(paths)
    assert notify is not None  # Linux: the project's machines have inotify
    try:
        (tmp_path / "other.sqlite").write_bytes(b"noise")  # not ours: ignored
        assert not touched(notify.drain(), paths)
        with (tmp_path / "bus.sqlite-wal").open("ab") as wal:
            wal.write(b"frame")
        assert touched(notify.drain(), paths)
        assert notify.drain() == []  # drained: nothing left to report
    finally:
        notify.close()


def test_a_change_before_a_watch_started_shows_in_the_signature(tmp_path: Path) -> None:
    db = tmp_path / "bus.sqlite"
    db.write_bytes(b"x")
    paths = watched_paths(db, None)
    before = file_signature(paths)
    assert file_signature(paths) == before
    db.write_bytes(b"xy")
    assert file_signature(paths) != before
