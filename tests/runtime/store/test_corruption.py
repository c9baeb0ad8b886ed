"""Bad files get a clear error and lose nothing: corrupt, foreign, or from a newer mnemara."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from runtime.errors import StoreCorruptError, StoreError
from runtime.store import TurnStore
from runtime.window.rows import NewRow


@pytest.fixture
def healthy_bytes(tmp_path: Path) -> bytes:
    """A store with enough rows to span many pages, closed so everything is in the main file."""
    path = tmp_path / "healthy.sqlite"
    with TurnStore.open(path) as store:
        text = "x" * 3_000
        store.append([NewRow("user", ({"type": "text", "text": text},), 750)] * 100)
    return path.read_bytes()


def scribble(data: bytes) -> bytes:
    damaged = bytearray(data)
    damaged[4096 * 3 : 4096 * 3 + 2_000] = os.urandom(2_000)
    return bytes(damaged)


DAMAGE: dict[str, Callable[[bytes], bytes]] = {
    "random bytes": lambda data: os.urandom(8_192),
    "truncated to half": lambda data: data[: len(data) // 2],
    "truncated inside the header": lambda data: data[:50],
    "a page overwritten": scribble,
}


@pytest.mark.parametrize("damage", DAMAGE.values(), ids=DAMAGE.keys())
def test_corrupt_file_raises_and_is_left_untouched(
    tmp_path: Path, healthy_bytes: bytes, damage: Callable[[bytes], bytes]
) -> None:
    path = tmp_path / "turns.sqlite"
    broken = damage(healthy_bytes)
    path.write_bytes(broken)
    with pytest.raises(StoreCorruptError) as info:
        TurnStore.open(path)
    assert info.value.path == path
    message = str(info.value)
    assert str(path) in message and "mnemara import" in message and "backup" in message
    assert path.read_bytes() == broken, "never replaced by a fresh, empty database"
    assert [p.name for p in tmp_path.glob("turns.sqlite*")] == ["turns.sqlite"], "no -wal, no -shm"


def test_an_empty_file_is_a_new_store(tmp_path: Path) -> None:
    path = tmp_path / "turns.sqlite"
    path.touch()
    with TurnStore.open(path) as store:
        assert store.migration.action == "created"


def test_a_store_from_a_newer_mnemara_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "turns.sqlite"
    with TurnStore.open(path) as store:
        store.append([NewRow("user", ({"type": "text", "text": "keep me"},), 2)])
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA user_version = 99")
    conn.close()
    before = path.read_bytes()
    with pytest.raises(StoreError, match="newer mnemara") as info:
        TurnStore.open(path)
    assert not isinstance(info.value, StoreCorruptError)
    assert "v99" in str(info.value) and path.read_bytes() == before


def test_someone_elses_database_is_not_touched(tmp_path: Path) -> None:
    path = tmp_path / "turns.sqlite"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE invoices (id INTEGER PRIMARY KEY, total REAL)")
    conn.execute("INSERT INTO invoices (total) VALUES (12.5)")
    conn.commit()
    conn.close()
    before = path.read_bytes()
    with pytest.raises(StoreError, match=r"not a mnemara turn store.*invoices"):
        TurnStore.open(path)
    assert path.read_bytes() == before
    assert not list(tmp_path.glob("*.bak"))
