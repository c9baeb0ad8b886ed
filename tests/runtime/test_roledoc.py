"""The role doc is re-read every turn; problems warn once per change and fall back."""

from __future__ import annotations

from pathlib import Path

import pytest

from runtime.errors import RoleDocError
from runtime.instance.roledoc import RoleDocSource, read_role_doc, role_text_flags


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


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        (b"bell\x07", "control character U+0007 on line 1 (byte 4)"),
        ("c1\u009b31m".encode(), "control character U+009B"),
        (b"old mac\rline", "control character U+000D"),
    ],
)
def test_control_characters_are_refused_with_where(
    tmp_path: Path, content: bytes, needle: str
) -> None:
    doc = tmp_path / "role.md"
    doc.write_bytes(content)
    with pytest.raises(RoleDocError) as caught:
        read_role_doc(doc)
    assert needle in str(caught.value) and str(doc) in str(caught.value)


def test_tabs_crlf_a_leading_bom_and_ordinary_non_ascii_are_fine(tmp_path: Path) -> None:
    doc = tmp_path / "role.md"
    doc.write_bytes("\ufeff# Rôle\r\n\tBe brief: 日本語 ok, emoji 🙂.\r\n".encode())
    assert read_role_doc(doc) == "# Rôle\r\n\tBe brief: 日本語 ok, emoji 🙂.\r\n"


def test_invisible_characters_are_kept_and_named_where_they_are(tmp_path: Path) -> None:
    """Bidi controls and zero-width characters are not refused (an emoji sequence needs a
    zero-width joiner); `role_text_flags` names them for the operator."""
    doc = tmp_path / "role.md"
    text = "# Role\nok\n\u202eevil, a\u2066b, \U0001f468\u200d\U0001f4bb, x\ufeffy"
    doc.write_text(text, encoding="utf-8")
    assert read_role_doc(doc) == text
    flags = role_text_flags(text)
    assert flags[0] == "U+202E (RIGHT-TO-LEFT OVERRIDE) on line 3 (byte 10)"
    assert [f.split(" ", 1)[0] for f in flags] == ["U+202E", "U+2066", "U+200D", "U+FEFF"]
    assert role_text_flags("\ufeff# plain\r\n\tok") == []


def test_a_device_is_refused_for_what_it_is(tmp_path: Path) -> None:
    """FIFOs, with a guard against hanging, are in tests/security/test_reading_rows.py (#24)."""
    with pytest.raises(RoleDocError, match="is a character device, not a regular file"):
        read_role_doc(Path("/dev/null"))
    big = tmp_path / "big.md"
    with big.open("wb") as fh:
        fh.truncate(10 * 1024**3)
    with pytest.raises(RoleDocError, match="larger than 1 MiB"):
        read_role_doc(big)
