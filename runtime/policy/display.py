"""Showing untrusted text to the operator: control, zero-width and bidi characters made visible.

A prompt that asks "allow `rm -rf build`?" is only an honest question if what the operator reads
is what will run. Terminal escapes can repaint the line, a carriage return can hide its start,
and zero-width or bidi-override characters can make two different strings look the same. Every
such character is shown as a `\\xNN` / `\\uNNNN` escape instead.

Two forms. `escape_for_display` is for prose (a reason, a note): ordinary non-ASCII such as
`café` stays readable. `escape_command_for_display` is for what will run or be touched (a
command, a path, an "always" rule): there every character outside printable ASCII is escaped,
because a look-alike (`ɡ` U+0261 for `g`, Cyrillic `а`, Greek `ο`, full-width `ｇ`) reads as
the ASCII letter it imitates, and no list of look-alikes is ever complete. So `ɡit status`
is shown as `\\u0261it status` and visibly differs from `git status` (#16).
"""

from __future__ import annotations

import unicodedata

# Categories that render as nothing, move the cursor, or reorder text: controls (Cc), format
# characters such as zero-width spaces and bidi overrides (Cf), line and paragraph separators
# (Zl, Zp), and code points a terminal cannot be trusted to draw (Cs, Co, Cn).
_HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs", "Co", "Cn"})

# Not in those categories but invisible in most fonts all the same.
_INVISIBLE_EXTRA = frozenset({"\u115f", "\u1160", "\u3164", "\uffa0", "\u034f", "\u2800"})

_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def is_hidden_character(char: str) -> bool:
    """True for a character that a terminal would not show faithfully as itself."""
    return unicodedata.category(char) in _HIDDEN_CATEGORIES or char in _INVISIBLE_EXTRA


def has_hidden_characters(text: str) -> bool:
    return any(is_hidden_character(c) for c in text)


def _escape(char: str) -> str:
    code = ord(char)
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def escape_for_display(text: str, *, max_chars: int | None = None) -> str:
    """`text` with every hidden character written as an escape, optionally shortened.

    Backslashes are left as they are: doubling them would make ordinary commands
    (`grep 'a\\|b'`) hard to read, and a literal `\\x1b` in the text can only make the operator
    more careful, never hide anything.
    """
    out: list[str] = []
    for char in text:
        if char in _NAMED:
            out.append(_NAMED[char])
        elif is_hidden_character(char):
            out.append(_escape(char))
        else:
            out.append(char)
    return _shorten("".join(out), max_chars)


def escape_command_for_display(text: str, *, max_chars: int | None = None) -> str:
    """`text` in printable ASCII only: every other character written as an escape (#16).

    For commands, paths and rules in an approval prompt, where a look-alike letter must not
    pass for the ASCII one. Applying it to text `escape_for_display` already escaped changes
    nothing that was escaped (escapes are ASCII), so either may come first.
    """
    out: list[str] = []
    for char in text:
        if char in _NAMED:
            out.append(_NAMED[char])
        elif " " <= char <= "~":
            out.append(char)
        else:
            out.append(_escape(char))
    return _shorten("".join(out), max_chars)


def _shorten(shown: str, max_chars: int | None) -> str:
    if max_chars is not None and len(shown) > max_chars:
        omitted = len(shown) - max_chars
        shown = f"{shown[:max_chars]}... [{omitted} more characters]"
    return shown
