"""Both checkpoint stores, one contract: a rewind restores a turn's changes exactly (content,
files made since removed, files deleted since back, executable bits, symbolic links), takes
a checkpoint first so it can be undone, leaves excluded and oversized files alone, never
writes through a link, and pruning keeps the newest by count and age. Real files and, for
the git store, real git in tmp_path."""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

import pytest

from runtime.checkpoint import (
    Checkpoint,
    CheckpointSettings,
    CheckpointStore,
    find,
    open_store,
    rewind,
    take_and_prune,
)
from runtime.errors import CheckpointNotFoundError

STORES = ["git", "copy"] if shutil.which("git") else ["copy"]
SETTINGS = CheckpointSettings()

Snapshot = dict[str, tuple[str, bytes]]


def snapshot(area: Path, *, skip: tuple[str, ...] = ()) -> Snapshot:
    """Every file and link under `area` (not `.git`): kind (with the executable bit) and
    bytes, or the link's target."""
    found: Snapshot = {}
    for root, dirs, files in os.walk(area):
        dirs[:] = [d for d in dirs if d != ".git" and not os.path.islink(os.path.join(root, d))]
        links = [d for d in os.listdir(root) if os.path.islink(os.path.join(root, d))]
        for name in sorted(set(files) | set(links)):
            path = Path(root, name)
            rel = path.relative_to(area).as_posix()
            if rel.startswith(skip):
                continue
            st = os.lstat(path)
            if stat.S_ISLNK(st.st_mode):
                found[rel] = ("link", os.readlink(path).encode())
            else:
                kind = "exec" if st.st_mode & stat.S_IXUSR else "file"
                found[rel] = (kind, path.read_bytes())
    return found


@pytest.fixture(params=STORES)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> CheckpointStore:
    return open_store(tmp_path / "instance", prefer=request.param)


@pytest.fixture
def area(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    (work / "src" / "deep").mkdir(parents=True)
    (work / "src" / "a.py").write_text("print('a')\n")
    (work / "src" / "deep" / "b.py").write_text("B = 1\n")
    (work / "run.sh").write_text("#!/bin/sh\necho hi\n")
    (work / "crlf.txt").write_bytes(b"one\r\ntwo\r\n")
    (work / "bin.dat").write_bytes(bytes(range(256)) * 4)
    os.symlink("src/a.py", work / "link")
    return work


def take(store: CheckpointStore, area: Path, turn: int, **settings: object) -> Checkpoint:
    chosen = CheckpointSettings(**settings) if settings else SETTINGS  # type: ignore[arg-type]
    return take_and_prune(store, [area], settings=chosen, turn=turn, note=f"turn {turn}").checkpoint


def a_turn(area: Path) -> None:
    """What a turn might do: edit, make, delete, chmod, relink, replace a file by a folder."""
    (area / "src" / "a.py").write_text("print('changed')\n")
    (area / "new.txt").write_text("made by the turn\n")
    (area / "made" / "sub").mkdir(parents=True)
    (area / "made" / "sub" / "x.txt").write_text("x\n")
    (area / "src" / "deep" / "b.py").unlink()
    os.chmod(area / "run.sh", 0o644)
    (area / "link").unlink()
    os.symlink("run.sh", area / "link")
    (area / "bin.dat").unlink()
    (area / "bin.dat").mkdir()
    (area / "bin.dat" / "inside").write_text("a folder now\n")


def test_a_rewind_restores_a_turns_changes_exactly(store: CheckpointStore, area: Path) -> None:
    os.chmod(area / "run.sh", 0o755)
    before = snapshot(area)
    first = take(store, area, 1)
    a_turn(area)
    after_turn = snapshot(area)
    take(store, area, 2)
    report = rewind(store, first.number, settings=SETTINGS)
    assert report.ok, report.details()
    assert snapshot(area) == before
    assert not (area / "made").exists()  # the folders only its files needed are gone too
    assert report.count("restored") == 3  # a.py, run.sh (its mode), link (its target)
    # b.py, and bin.dat: a folder now, whose file goes before the file comes back.
    assert report.count("recreated") == 2 and report.count("removed") == 3
    # The rewind's own checkpoint holds the files as the turn left them: undo the rewind.
    undo = rewind(store, report.before.number, settings=SETTINGS)
    assert undo.ok and snapshot(area) == after_turn


def test_the_default_is_the_latest_turn_and_unknown_numbers_are_refused(
    store: CheckpointStore, area: Path
) -> None:
    with pytest.raises(CheckpointNotFoundError) as none:
        find(store, None)
    assert none.value.number is None and "no checkpoints yet" in str(none.value)
    take(store, area, 1)
    second = take(store, area, 2)
    (area / "src" / "a.py").write_text("the last turn\n")
    report = rewind(store, None, settings=SETTINGS)
    assert report.target.number == second.number
    assert find(store, None).number == second.number  # a rewind's checkpoint is not a turn's
    with pytest.raises(CheckpointNotFoundError) as unknown:
        find(store, 99)
    assert unknown.value.number == 99 and "no checkpoint 99" in str(unknown.value)


def test_nothing_changed_nothing_written(store: CheckpointStore, area: Path) -> None:
    first = take(store, area, 1)
    stamp = os.lstat(area / "src" / "a.py").st_mtime_ns
    report = rewind(store, first.number, settings=SETTINGS)
    assert report.ok and "nothing to change" in report.summary()
    assert os.lstat(area / "src" / "a.py").st_mtime_ns == stamp
    assert take(store, area, 2).areas[0].changes.total == 0


def test_excluded_paths_are_never_checkpointed_or_touched(
    store: CheckpointStore, area: Path
) -> None:
    secret = area / ".ssh"
    secret.mkdir()
    (secret / "id").write_text("key 1\n")
    first = store.take([area], kind="turn", settings=SETTINGS, exclude=[secret], turn=1, note="go")
    assert ".ssh/id" not in store.files(first)[str(area)]
    (secret / "id").write_text("key 2\n")
    (secret / "new").write_text("made since\n")
    report = rewind(store, first.number, settings=SETTINGS)  # the record says what it left out
    assert report.ok
    assert (secret / "id").read_text() == "key 2\n" and (secret / "new").exists()


def test_a_file_over_the_size_cap_is_named_and_left_as_it_is(
    store: CheckpointStore, area: Path
) -> None:
    (area / "big.bin").write_bytes(b"x" * 3000)
    first = take(store, area, 1, max_file_mb=0.001)  # 1,048 bytes
    assert first.areas[0].capped == ("big.bin",)
    assert "big.bin" not in store.files(first)[str(area)]
    (area / "big.bin").write_bytes(b"y" * 3000)
    (area / "src" / "a.py").write_text("changed\n")
    report = rewind(store, first.number, settings=CheckpointSettings(max_file_mb=0.001))
    assert (area / "big.bin").read_bytes() == b"y" * 3000  # not removed as "made since"
    assert (area / "src" / "a.py").read_text() == "print('a')\n"
    assert any("left as is" in line and "big.bin" in line for line in report.details())


def test_an_area_with_too_many_files_is_skipped_and_said(
    store: CheckpointStore, area: Path
) -> None:
    checkpoint = take(store, area, 1, max_files=3)
    (record,) = checkpoint.areas
    assert record.skipped and "max_files" in record.skipped
    assert checkpoint.recorded() == ()


def test_a_rewind_never_writes_through_a_link_a_turn_left(
    store: CheckpointStore, area: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    first = take(store, area, 1)
    shutil.rmtree(area / "src")
    os.symlink(outside, area / "src")  # the folder is now a link out of the area
    report = rewind(store, first.number, settings=SETTINGS)
    assert report.ok, report.details()
    assert list(outside.iterdir()) == []
    assert not (area / "src").is_symlink() and (area / "src" / "a.py").is_file()


def test_pruning_keeps_the_newest_by_count_and_by_age(store: CheckpointStore, area: Path) -> None:
    for turn in range(1, 6):
        (area / "src" / "a.py").write_text(f"turn {turn}\n")
        take(store, area, turn, keep=3)
    kept = [c.number for c in store.checkpoints()]
    assert kept == [3, 4, 5]
    report = rewind(store, 3, settings=SETTINGS)  # the oldest kept still restores
    assert report.ok and (area / "src" / "a.py").read_text() == "turn 3\n"
    later = take_and_prune(
        store, [area], settings=CheckpointSettings(max_age_days=1), now=lambda: 10**12
    )
    assert [c.number for c in store.checkpoints()] == [later.checkpoint.number]
    assert set(later.dropped) == {3, 4, 5, report.before.number}


def test_an_unreadable_record_is_set_aside_and_its_number_not_reused(
    store: CheckpointStore, area: Path
) -> None:
    first = take(store, area, 1)
    broken = store.root / "meta" / "00000002.json"
    broken.write_text("{ not json")
    second = take(store, area, 2)
    assert second.number == 3
    assert [c.number for c in store.checkpoints()] == [first.number, 3]
