"""Bounded JSON parsing for rows another writer stored: depth and size capped, no recursion.

The standard parser recurses once per nesting level, so `[` x 100,000 raises RecursionError
instead of the decode error callers handle. `load_json` scans the text once first, without
recursion, and refuses a document that is too big or nests too deep with a JsonLimitError, a
`json.JSONDecodeError` carrying the offset, so a caller's handling of broken JSON covers it.

The scan tokenizes strings as the parser does (up to the first unescaped quote) and counts
brackets outside them, so before any point where the parser would fail it sees the nesting
the parser would. The regex is possessive: no input makes the scan backtrack.

This is the JSON half of `runtime/jsonload.py`, held again because peerbus may import
nothing from the project (pyproject's import contracts). Keep the two in step;
tests/security/test_parse_rows.py runs the same cases against both.
"""

from __future__ import annotations

import json
import re
from typing import Any

MAX_DEPTH = 64
"""Nesting allowed: far more than a payload needs, far less than the recursion limit."""
MAX_BYTES = 16 * 1024 * 1024
"""Size cap for a caller that has none of its own (characters of text, or bytes)."""

# A JSON string (closed, or running to the end of the text) or a bracket.
_JSON_TOKEN = re.compile(r'"(?:[^"\\]++|\\.)*+"?|[\[\]{}]', re.DOTALL)


class JsonLimitError(json.JSONDecodeError):
    """Raised when a JSON document is over the size cap or nests deeper than the depth cap.

    A JSONDecodeError (so a ValueError): callers report it as they report broken JSON.
    """


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


def _as_text(text: str | bytes | bytearray) -> str:
    if isinstance(text, str):
        return text
    # As json.loads does with bytes: UTF-8, -16 or -32, told apart by the first bytes.
    return bytes(text).decode(json.detect_encoding(text), "surrogatepass")
