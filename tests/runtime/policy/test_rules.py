"""permissions.json: fail-closed loading, atomic merging saves, two processes at once."""

from __future__ import annotations

import json
import multiprocessing
from pathlib import Path
from typing import Any

import pytest

from runtime.errors import PolicyError
from runtime.policy.rules import load_rules, remember_targets

CORRUPT = [
    ("not-json", "{not json"),
    ("truncated", '{"Bash": ["git\\\\ status"'),
    ("list-at-top", '["git status"]'),
    ("string-value", '{"Bash": "git status"}'),
    ("number-in-list", '{"Bash": [1]}'),
    ("bad-regex", '{"Bash": ["("]}'),
    ("back-reference", r'{"Bash": ["(a)\\1"]}'),
    ("empty-pattern", '{"Bash": [""]}'),
    ("empty-tool", '{"": ["x"]}'),
]


@pytest.mark.parametrize(("name", "text"), CORRUPT, ids=[c[0] for c in CORRUPT])
def test_a_damaged_file_fails_closed_naming_it(tmp_path: Path, name: str, text: str) -> None:
    path = tmp_path / "permissions.json"
    path.write_text(text)
    with pytest.raises(PolicyError) as info:
        load_rules(path)
    assert str(path) in str(info.value)


def test_not_utf8_fails_closed(tmp_path: Path) -> None:
    path = tmp_path / "permissions.json"
    path.write_bytes(b"\xff\xfe{")
    with pytest.raises(PolicyError):
        load_rules(path)


def test_saving_onto_a_damaged_file_refuses_and_keeps_it(tmp_path: Path) -> None:
    path = tmp_path / "permissions.json"
    path.write_text("{oops")
    with pytest.raises(PolicyError):
        remember_targets(path, "Bash", ["ls"])
    assert path.read_text() == "{oops"


def test_a_missing_file_is_empty(tmp_path: Path) -> None:
    assert load_rules(tmp_path / "permissions.json").sources() == {}


def test_remember_stores_the_exact_target_escaped(tmp_path: Path) -> None:
    path = tmp_path / "permissions.json"
    remember_targets(path, "Bash", ["git log -n 1"])
    rules = remember_targets(path, "Bash", ["git log -n 1", "make *.o"])
    assert json.loads(path.read_text()) == {"Bash": ["git\\ log\\ \\-n\\ 1", "make\\ \\*\\.o"]}
    (first, second) = rules.patterns_for("Bash")
    assert first.matches("git log -n 1") and not first.matches("git log -n 12")
    assert second.matches("make *.o") and not second.matches("make a.o")
    assert path.stat().st_mode & 0o077 == 0  # only the owner can read the rules


def test_original_style_anchored_patterns_load(tmp_path: Path) -> None:
    path = tmp_path / "permissions.json"
    path.write_text(json.dumps({"Bash": ["^git status$", "^ls( |$)"]}))
    (status, ls) = load_rules(path).patterns_for("Bash")
    assert status.matches("git status")
    assert ls.matches("ls") and not ls.matches("ls -la")  # full match now, not search


SAVES = 40


def _save_many(path: str, tool: str, start: Any) -> None:
    start.wait()  # both processes begin together, so their saves really overlap
    for i in range(SAVES):
        remember_targets(Path(path), tool, [f"{tool} command {i}"])


def test_two_processes_saving_at_once_lose_nothing(tmp_path: Path) -> None:
    path = tmp_path / "permissions.json"
    spawn = multiprocessing.get_context("spawn")
    start = spawn.Barrier(2)
    workers = [spawn.Process(target=_save_many, args=(str(path), t, start)) for t in "AB"]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=60)
        assert worker.exitcode == 0
    saved = load_rules(path)
    assert len(saved.patterns_for("A")) == SAVES
    assert len(saved.patterns_for("B")) == SAVES
