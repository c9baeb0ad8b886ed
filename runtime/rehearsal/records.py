"""The request log: what each call to the rehearsal model was, and summed usage and cost."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from runtime.rehearsal.cache import CacheAccount, CacheUsage
from runtime.rehearsal.layout import Divergence
from runtime.rehearsal.replies import Reply


@dataclass(frozen=True)
class RequestRecord:
    """One logged `/v1/messages` request and what the rehearsal model made of it."""

    panel: str
    index: int  # position among this panel's requests, from 0
    at: float  # clock time
    body: Mapping[str, Any]
    stream: bool
    status: int
    source: str  # the rule that answered: "panels.x.replies[2]", "hook", "fallback", ...
    reply: Reply | None = None
    account: CacheAccount | None = None  # None when the request was refused before the model
    output_tokens: int = 0
    cost_usd: float = 0.0

    @property
    def usage(self) -> CacheUsage | None:
        return self.account.usage if self.account else None

    @property
    def divergence(self) -> Divergence | None:
        return self.account.divergence if self.account else None

    def to_json(self, *, with_body: bool = False) -> dict[str, Any]:
        """A JSON-able summary (the request body only when asked: it can be large)."""
        out: dict[str, Any] = {
            "panel": self.panel,
            "index": self.index,
            "at": self.at,
            "status": self.status,
            "stream": self.stream,
            "source": self.source,
            "usage": self.usage.as_api() if self.usage else None,
            "output_tokens": self.output_tokens,
            "cost_usd": self.cost_usd,
            "cache": self.account.explain() if self.account else None,
        }
        if with_body:
            out["body"] = self.body
        return out


@dataclass(frozen=True)
class Totals:
    """Summed usage and cost over some requests (a panel's, or a whole run's)."""

    requests: int = 0
    input_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0

    @property
    def cache_read_share(self) -> float:
        """The share of prompt tokens read from the cache."""
        prompt = self.input_tokens + self.cache_creation_input_tokens + self.cache_read_input_tokens
        return self.cache_read_input_tokens / prompt if prompt else 0.0


def summarize(records: Iterable[RequestRecord]) -> Totals:
    totals = Totals()
    for r in records:
        usage = r.usage or CacheUsage(0)
        totals = Totals(
            totals.requests + 1,
            totals.input_tokens + usage.input_tokens,
            totals.cache_creation_input_tokens + usage.cache_creation_input_tokens,
            totals.cache_read_input_tokens + usage.cache_read_input_tokens,
            totals.output_tokens + r.output_tokens,
            totals.cost_usd + r.cost_usd,
        )
    return totals


@dataclass(frozen=True)
class OtherRequest:
    """A request to anything but `/v1/messages` (answered, or refused with 404)."""

    method: str
    path: str
    panel: str | None
    status: int
