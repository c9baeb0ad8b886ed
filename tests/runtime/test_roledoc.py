"""The role doc is re-read every turn; problems warn once per change and fall back."""

from __future__ import annotations

from pathlib import Path

import pytest

from runtime.errors import RoleDocError
from runtime.roledoc import RoleDocSource, read_role_doc


def test_edits_are_picked_up_on_the_next_read(tmp_path: Path) -> None:
    doc = tmp_path / "role.md"
    doc.write_text("v1", encoding="utf-8")
    source = RoleDocSource(doc)
    assert source.read().text == "v1"
    doc.write_text("v2", encoding="utf-8")
    assert source.read().text == "v2"


def test_missing_doc_warns_once_per_change_and_keeps_last_good_text(tmp_path: Path) -> None:
    doc = tmp_path / "role.md"
    doc.write_text("good", encoding="utf-8")
    source = RoleDocSource(doc)
    source.read()
    doc.unlink()
    first = source.read()
    second = source.read()
    assert first.text == "good" and first.warning and "not found" in first.warning
    assert second.text == "good" and second.warning is None
    doc.mkdir()  # a different problem is reported again
    third = source.read()
    assert third.warning and "directory" in third.warning


@pytest.mark.parametrize(
    ("content", "needle"),
    [(b"\x00\x01binary", "binary"), (b"\xff\xfe\xfa", "UTF-8")],
)
def test_binary_or_non_utf8_doc_is_refused(tmp_path: Path, content: bytes, needle: str) -> None:
    doc = tmp_path / "role.md"
    doc.write_bytes(content)
    with pytest.raises(RoleDocError, match=needle):
        read_role_doc(doc)


def test_directory_is_refused(tmp_path: Path) -> None:
    with pytest.raises(RoleDocError, match="directory"):
        read_role_doc(tmp_path)


def test_no_role_doc_set_warns_and_sends_empty_system_prompt() -> None:
    read = RoleDocSource(None).read()
    assert read.text == "" and read.warning and "mnemara role" in read.warning
