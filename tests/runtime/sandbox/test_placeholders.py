"""Stand-ins shared by processes: one process's last turn never removes a stand-in that
another process's sandbox still covers. Two `Placeholders` stand for two processes here:
each holds its own open file for the lock, and `flock` locks conflict between open files
as they do between processes."""

from __future__ import annotations

from pathlib import Path

from runtime.sandbox.placeholders import Placeholders


def test_a_stand_in_stays_while_another_process_holds_it(tmp_path: Path) -> None:
    first, second = Placeholders(), Placeholders()
    with first.held([tmp_path]):
        assert (tmp_path / ".envrc").is_file() and (tmp_path / ".git").is_dir()
        with second.held([tmp_path]):  # adopts the first one's stand-ins
            pass
        # The second's last turn ended while the first still holds them: they stay.
        assert (tmp_path / ".envrc").is_file() and (tmp_path / ".git").is_dir()
    assert not (tmp_path / ".envrc").exists() and not (tmp_path / ".git").exists()


def test_the_last_holder_removes_them_whichever_came_first(tmp_path: Path) -> None:
    first, second = Placeholders(), Placeholders()
    outer = first.held([tmp_path])
    outer.__enter__()
    with second.held([tmp_path]):
        outer.__exit__(None, None, None)  # the first process's turns end first
        assert (tmp_path / ".envrc").is_file() and (tmp_path / ".git").is_dir()
    assert not (tmp_path / ".envrc").exists() and not (tmp_path / ".git").exists()


def test_a_real_file_is_never_taken_for_a_stand_in(tmp_path: Path) -> None:
    (tmp_path / ".envrc").write_text("export A=1\n", encoding="utf-8")
    with Placeholders().held([tmp_path]):
        pass
    assert (tmp_path / ".envrc").read_text(encoding="utf-8") == "export A=1\n"
    assert not (tmp_path / ".git").exists()
