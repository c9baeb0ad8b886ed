"""What a rehearsed request bills: the shared rate table (runtime/turn/pricing.py) applied to the
prompt-cache accounting of runtime/rehearsal/cache.py, so that a rehearsal's cost and the
CLI's `total_cost_usd` agree."""

from __future__ import annotations

from runtime.rehearsal.cache import CacheUsage
from runtime.turn.pricing import Rates, rates_for, request_cost_usd

__all__ = ["Rates", "cost_usd", "rates_for"]


def cost_usd(model: str, usage: CacheUsage, output_tokens: int) -> float:
    """The cost of one request with this usage."""
    return request_cost_usd(
        model,
        input_tokens=usage.input_tokens,
        output_tokens=output_tokens,
        cache_write_5m_tokens=usage.ephemeral_5m_input_tokens,
        cache_write_1h_tokens=usage.ephemeral_1h_input_tokens,
        cache_read_tokens=usage.cache_read_input_tokens,
    )
