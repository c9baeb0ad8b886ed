"""Checklist row #42 for the bounded parsers themselves: deep or huge JSON and TOML are a
decode error the callers already handle, never a RecursionError or a slow scan."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from sqlitekit import jsonload

ROOT = Path(__file__).resolve().parents[2]
DEEP = "[" * 100_000


@pytest.mark.parametrize(
    "doc", [DEEP, '{"a":' * 100_000, '[{"a":' * 50_000], ids=["arrays", "objects", "mixed"]
)
def test_42_deep_json_is_a_decode_error_not_recursion(doc: str) -> None:
    """#42: deep nesting is refused before the parser recurses, as the error callers catch."""
    with pytest.raises(json.JSONDecodeError) as caught:
        jsonload.load_json(doc)
    assert isinstance(caught.value, jsonload.JsonLimitError)
    assert "nests deeper than 64 levels" in str(caught.value)


def test_42_the_depth_scan_counts_what_the_parser_would() -> None:
    """#42: exactly the limit parses; one more is refused; brackets in strings never count."""
    assert jsonload.load_json("[" * 64 + "]" * 64, max_depth=64) is not None
    with pytest.raises(jsonload.JsonLimitError):
        jsonload.load_json("[" * 65 + "]" * 65, max_depth=64)
    quoted = json.dumps({"text": "[" * 10_000 + '\\"{{{', "more": ["]]]"]})
    assert jsonload.load_json(quoted)["text"].startswith("[[[")
    with pytest.raises(jsonload.JsonLimitError, match="over the 10 cap"):
        jsonload.load_json(b'{"a": "0123456789"}', max_bytes=10)


def test_42_the_depth_scan_cannot_itself_be_made_slow() -> None:
    """#42: an unterminated string full of escaped quotes (quadratic for a naive regex) and
    a megabyte of brackets inside a string are scanned in one pass (bounded by a timeout)."""
    code = (
        "import sqlitekit.jsonload as m, json\n"
        "for doc in ['\"' + '\\\\\"' * 400_000, '[\"' + '[' * 2_000_000 + '\"]']:\n"
        "    try:\n        m.load_json(doc)\n    except json.JSONDecodeError:\n        pass\n"
    )
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True, timeout=60)


def test_42_deep_toml_and_long_dotted_keys_are_refused_before_parsing() -> None:
    """#42 for TOML (team files, rehearsal scripts): brackets and dotted keys are capped."""
    for doc in ["a = " + "[" * 100_000, "a = " + "{b=" * 100_000, "a" + ".a" * 100_000 + " = 1"]:
        with pytest.raises(jsonload.TomlLimitError, match="nests deeper than 32"):
            jsonload.load_toml(doc)
    fine = 'x = [1.5, 2.5, 3.5, 4.5]\ny = """a.b.c [[[ """\n[t.u.v]\nz = {a.b = 1}\n'
    assert jsonload.load_toml(fine)["t"]["u"]["v"]["z"] == {"a": {"b": 1}}
