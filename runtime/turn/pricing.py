"""What a model request costs: per-model rates in USD per million tokens, and the arithmetic.

Used by the live driver to estimate a turn's running cost request by request (the SDK's
`total_cost_usd` replaces the estimate when the turn ends) and by the rehearsal model to bill.

Rates are the published list prices of the models the bundled CLI (2.1.332) knows, checked
against the CLI's own price table so that a rehearsal's cost and the CLI's `total_cost_usd`
agree:

| model id prefix        | input | output | cache write 5m | cache write 1h | cache read |
|------------------------|------:|-------:|---------------:|---------------:|-----------:|
| claude-fable-5-2       | 8     | 40     | 10             | 16             | 0.20       |
| claude-fable-5-1       | 10    | 50     | 12.50          | 20             | 0.25       |
| claude-fable-5         | 10    | 50     | 12.50          | 20             | 1.00       |
| claude-opus-5-5        | 4     | 20     | 5              | 8              | 0.20       |
| claude-opus-5, -4-5…8  | 5     | 25     | 6.25           | 10             | 0.50       |
| claude-opus-4-0, -4-1  | 15    | 75     | 18.75          | 30             | 1.50       |
| claude-sonnet-5-5      | 2     | 10     | 2.50           | 4              | 0.10       |
| claude-sonnet-5        | 2     | 10     | 2.50           | 4              | 0.20       |
| claude-sonnet-4…       | 3     | 15     | 3.75           | 6              | 0.30       |
| claude-haiku-5-5       | 0.10  | 0.50   | 0.125          | 0.20           | 0.01       |
| claude-haiku-4-5       | 1     | 5      | 1.25           | 2              | 0.10       |

The usual shape is cache write 1.25x input for 5 minutes and 2x for an hour, cache read 0.1x
(`Rates.standard`); the newest models read for less. A model no prefix matches is priced by
its family (opus, sonnet, haiku, fable) at that family's newest rates, else as Opus 5.5.
Long-prompt surcharges (Haiku 5.5 above 100k tokens) are not modelled.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Rates:
    """USD per million tokens."""

    input: float
    output: float
    cache_write_5m: float
    cache_write_1h: float
    cache_read: float

    @classmethod
    def standard(cls, input: float, output: float) -> Rates:
        return cls(input, output, input * 1.25, input * 2, input * 0.1)


OPUS_5_5 = Rates(4, 20, 5, 8, 0.2)
RATES: dict[str, Rates] = {
    "claude-fable-5-2": Rates(8, 40, 10, 16, 0.2),
    "claude-fable-5-1": Rates(10, 50, 12.5, 20, 0.25),
    "claude-fable-5": Rates.standard(10, 50),
    "claude-opus-5-5": OPUS_5_5,
    "claude-opus-5": Rates.standard(5, 25),
    "claude-opus-4": Rates.standard(5, 25),
    "claude-opus-4-0": Rates.standard(15, 75),
    "claude-opus-4-1": Rates.standard(15, 75),
    "claude-sonnet-5-5": Rates(2, 10, 2.5, 4, 0.1),
    "claude-sonnet-5": Rates.standard(2, 10),
    "claude-sonnet-4": Rates.standard(3, 15),
    "claude-haiku-5-5": Rates(0.1, 0.5, 0.125, 0.2, 0.01),
    "claude-haiku-4-5": Rates.standard(1, 5),
}
FAMILY_NEWEST = {
    "fable": "claude-fable-5-2",
    "opus": "claude-opus-5-5",
    "sonnet": "claude-sonnet-5-5",
    "haiku": "claude-haiku-5-5",
}


def rates_for(model: str) -> Rates:
    """The rates for a model id: the longest matching prefix, else its family's, else Opus 5.5."""
    matches = [prefix for prefix in RATES if model.startswith(prefix)]
    if matches:
        return RATES[max(matches, key=len)]
    for family, prefix in FAMILY_NEWEST.items():
        if family in model:
            return RATES[prefix]
    return OPUS_5_5


def request_cost_usd(
    model: str,
    *,
    input_tokens: int,
    output_tokens: int,
    cache_write_5m_tokens: int = 0,
    cache_write_1h_tokens: int = 0,
    cache_read_tokens: int = 0,
) -> float:
    """The cost of one request with these token counts."""
    rates = rates_for(model)
    millionths = (
        input_tokens * rates.input
        + cache_write_5m_tokens * rates.cache_write_5m
        + cache_write_1h_tokens * rates.cache_write_1h
        + cache_read_tokens * rates.cache_read
        + output_tokens * rates.output
    )
    return millionths / 1_000_000
