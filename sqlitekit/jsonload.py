"""Bounded parsing of JSON and TOML we did not just write ourselves: depth and size capped.

The standard parsers recurse once per nesting level, so `[` x 100,000 raises RecursionError
(not the decode error every caller catches) and TOML's dotted keys cost memory quadratic in
their length. Before parsing, `load_json` and `load_toml` scan the text once, without
recursion, and refuse a document that is too big or nests too deep. The refusal is a
subclass of the parser's own decode error (`json.JSONDecodeError`, `tomllib.TOMLDecodeError`)
carrying the line and column, so every caller's existing "bad file" handling reports it,
naming the file or row as it already does.

Why the scan is sound: it tokenizes strings exactly as the parsers do (up to the first
unescaped quote) and counts brackets outside them, so up to the point where a parser would
fail it sees the same nesting the parser would. Every regex here is possessive: no input
makes the scan itself backtrack.

It sits in sqlitekit, under both runtime and peerbus, so that the two share one copy: the
bus reads payloads another writer stored with it, runtime its files and rows.
"""

from __future__ import annotations

import json
import re
import tomllib
from typing import Any

MAX_DEPTH = 64
"""Nesting allowed in JSON: far more than any file or payload of ours needs, far less than
the interpreter's recursion limit even from deep inside a running host."""
STORED_DEPTH = 256
"""Nesting allowed in rows of our own stores (turns.sqlite blocks, exports): a model's tool
input may nest more than a config file, and a row we wrote must stay readable."""
MAX_TOML_DEPTH = 32
"""Brackets and dotted-key parts allowed in TOML; tomllib's memory grows with the square of a
dotted key's length."""
MAX_BYTES = 16 * 1024 * 1024
"""Size cap for a caller that has none of its own (characters of text, or bytes)."""

# A JSON string (closed, or running to the end of the text) or a bracket.
_JSON_TOKEN = re.compile(r'"(?:[^"\\]++|\\.)*+"?|[\[\]{}]', re.DOTALL)
# TOML: multi-line and one-line strings of both kinds, comments, brackets, and what ends or
# extends a dotted key. A multi-line string may end in up to two extra quotes of content.
_TOML_TOKEN = re.compile(
    r'"""(?:[^"\\]++|\\.|"(?!""))*+(?:""""{0,2})?'
    r"|'''(?:[^']++|'(?!''))*+(?:''''{0,2})?"
    r'|"(?:[^"\\\n]++|\\.)*+"?'
    r"|'[^'\n]*+'?"
    r"|#[^\n]*+"
    r"|[\[\]{}=,\n.]",
    re.DOTALL,
)


class JsonLimitError(json.JSONDecodeError):
    """Raised when a JSON document is over the size cap or nests deeper than the depth cap.

    A JSONDecodeError (so a ValueError): callers report it as they report broken JSON.
    """


class TomlLimitError(tomllib.TOMLDecodeError):
    """Raised when a TOML document is over the size cap or nests (brackets or dotted keys)
    deeper than the cap. A TOMLDecodeError: callers report it as broken TOML."""


def load_json(
    text: str | bytes | bytearray, *, max_depth: int = MAX_DEPTH, max_bytes: int = MAX_BYTES
) -> Any:
    """`json.loads(text)`, refusing (JsonLimitError) text over `max_bytes` or nesting deeper
    than `max_depth` before the parser can recurse."""
    doc = _as_text(text)
    if len(text) > max_bytes:
        raise JsonLimitError(f"document is {len(text)} bytes, over the {max_bytes} cap", doc, 0)
    where = json_too_deep(doc, max_depth)
    if where is not None:
        raise JsonLimitError(f"nests deeper than {max_depth} levels", doc, where)
    return json.loads(doc)


def json_too_deep(text: str, max_depth: int) -> int | None:
    """The offset of the first bracket past `max_depth` levels of nesting, or None."""
    if text.count("[") + text.count("{") <= max_depth:
        return None  # too few brackets to nest that deep (most documents): no scan needed
    depth = 0
    for token in _JSON_TOKEN.finditer(text):
        char = token.group()[0]
        if char in "[{":
            depth += 1
            if depth > max_depth:
                return token.start()
        elif char in "]}":
            depth -= 1
    return None


def load_toml(text: str, *, max_depth: int = MAX_TOML_DEPTH, max_bytes: int = MAX_BYTES) -> Any:
    """`tomllib.loads(text)`, refusing (TomlLimitError) text over `max_bytes`, or brackets or a
    dotted key nested deeper than `max_depth`, before the parser sees it."""
    if len(text) > max_bytes:
        raise TomlLimitError(f"document is {len(text)} characters, over the {max_bytes} cap")
    where = toml_too_deep(text, max_depth)
    if where is not None:
        line = text.count("\n", 0, where) + 1
        column = where - text.rfind("\n", 0, where)
        raise TomlLimitError(
            f"nests deeper than {max_depth} levels (at line {line}, column {column})"
        )
    return tomllib.loads(text)


def toml_too_deep(text: str, max_depth: int) -> int | None:
    """The offset where brackets, or the dots of one dotted key, pass `max_depth`, or None.

    Dots are counted between separators (`=`, `,`, brackets, line ends): a float or a date
    has one, so only a dotted key (`a.b.c`, `[a.b.c]`) can reach the cap.
    """
    depth = dots = 0
    for token in _TOML_TOKEN.finditer(text):
        char = token.group()[0]
        if char == ".":
            dots += 1
            if dots > max_depth:
                return token.start()
            continue
        if char in "=,\n[]{}":
            dots = 0
        if char in "[{":
            depth += 1
            if depth > max_depth:
                return token.start()
        elif char in "]}":
            depth -= 1
    return None


def _as_text(text: str | bytes | bytearray) -> str:
    if isinstance(text, str):
        return text
    # As json.loads does with bytes: UTF-8, -16 or -32, told apart by the first bytes.
    return bytes(text).decode(json.detect_encoding(text), "surrogatepass")
