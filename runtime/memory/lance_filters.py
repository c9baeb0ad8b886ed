"""LanceDB filters for the `atoms` table as typed expressions (`lancedb.expr.col`/`lit`).

Never SQL pasted from text: a source or a kind is a literal value whatever characters it
holds, and anything but a string is refused before it reaches a predicate.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def literal(value: str) -> Any:
    """A string as a typed literal; refuses non-strings so nothing else reaches a predicate."""
    from lancedb.expr import lit

    if not isinstance(value, str):
        raise TypeError(f"a filter value must be a string, not {type(value).__name__}")
    return lit(value)


def among(sources: Sequence[str]) -> Any:
    """`source IN (...)` as a typed expression: each source is a literal, never SQL text."""
    from lancedb.expr import col

    return col("source").isin([literal(source) for source in dict.fromkeys(sources)])


def where_rows(kind: str | None, include_quarantined: bool) -> Any:
    """What search may return, as a typed expression (None: every row)."""
    from lancedb.expr import col

    where = None if include_quarantined else ~is_quarantined()
    if kind is not None:
        by_kind = col("kind") == literal(kind)
        where = by_kind if where is None else where & by_kind
    return where


def is_quarantined() -> Any:
    from lancedb.expr import col, lit

    return col("quarantined") == lit(True)
