"""Showing untrusted text to the operator: control, zero-width and bidi characters made visible.

A prompt that asks "allow `rm -rf build`?" is only an honest question if what the operator reads
is what will run. Terminal escapes can repaint the line, a carriage return can hide its start,
and zero-width or bidi-override characters can make two different strings look the same. Every
such character is shown as a `\\xNN` / `\\uNNNN` escape instead.
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
            code = ord(char)
            if code < 0x100:
                out.append(f"\\x{code:02x}")
            elif code < 0x10000:
                out.append(f"\\u{code:04x}")
            else:
                out.append(f"\\U{code:08x}")
        else:
            out.append(char)
    shown = "".join(out)
    if max_chars is not None and len(shown) > max_chars:
        omitted = len(shown) - max_chars
        shown = f"{shown[:max_chars]}... [{omitted} more characters]"
    return shown
