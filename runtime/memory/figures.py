"""How memory's figures (distances, spreads, scores) are printed: never as a negative zero.

A cosine distance between two vectors of the same meaning comes out as a tiny negative
number (floating-point rounding: 1 - 1.0000000000000002), which `f"{x:.3f}"` prints as
"-0.000" and `round(x, 3)` keeps as -0.0 in JSON. Both read as a bug, and a distance is never
below zero. Pure.
"""

from __future__ import annotations


def rounded(value: float, places: int = 3) -> float:
    """`value` rounded, with a zero always positive (-0.0 + 0.0 is 0.0)."""
    return round(value, places) + 0.0


def fixed(value: float, places: int = 3) -> str:
    """`value` with `places` decimals, as a person reads it: "0.000", never "-0.000"."""
    return f"{rounded(value, places):.{places}f}"
