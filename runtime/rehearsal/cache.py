"""Prompt-cache accounting: input, cache-write and cache-read tokens of each request.

The documented rules, as implemented here over a request's `Layout` (see layout.py):

- A cache entry is a prefix of the prompt, in cache order, ending at a block that carried
  `cache_control` in some earlier request (a breakpoint). Entries are keyed by the model and
  the exact bytes of the prefix; `cache_control` itself is not part of the key.
- Read: for each breakpoint of this request, the service looks for a live entry ending at the
  breakpoint or at one of the `lookback_blocks` (20) block boundaries before it, longest
  first. The longest hit over all breakpoints is read: `cache_read_input_tokens`.
- Write: every breakpoint past the hit whose prefix holds at least the model's minimum
  cacheable tokens writes an entry; the tokens from the hit up to the last such breakpoint
  are `cache_creation_input_tokens` (split by TTL, each segment taking the TTL of the
  breakpoint that ends it). Shorter prefixes are not cached, silently, as the service does.
- Everything else is `input_tokens`: the tail after the last written or read point, and the
  billing header.
- TTL: 5 minutes, or 1 hour for `{"ttl": "1h"}`, on the injected clock. Reading an entry
  refreshes it, as does a breakpoint inside the prefix that was read.
- More than `max_breakpoints` (4) markers is refused, as the service refuses it (400), and so
  is a 1-hour marker after a 5-minute one (longer-lived entries must come first).
- The minimum cacheable length follows the model (`MIN_CACHEABLE_BY_MODEL`).
- A top-level `cache_control` (automatic caching) puts a breakpoint on the last block.

The cache is shared by all panels of one server, like the service's cache is shared by an
organisation's requests; divergence (layout.py) is reported per panel.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from runtime.rehearsal.errors import CacheRuleError
from runtime.rehearsal.layout import (
    ApproxTokenCounter,
    Divergence,
    Layout,
    TokenCounter,
    Ttl,
    first_divergence,
    layout_of,
)

TTL_SECONDS: Mapping[Ttl, float] = {"5m": 300.0, "1h": 3600.0}


# The smallest prefix (in tokens) the service caches, by model-id prefix (the longest
# matching prefix wins), as the provider's documentation gives them. A model missing here
# takes `CacheRules.min_cacheable_tokens`.
MIN_CACHEABLE_BY_MODEL: Mapping[str, int] = {
    "claude-opus-5": 512,
    "claude-fable-5": 512,
    "claude-mythos-5": 512,
    "claude-sonnet-5": 1024,
    "claude-opus-4-8": 1024,
    "claude-opus-4-7": 4096,
    "claude-opus-4-6": 4096,
    "claude-opus-4-5": 4096,
    "claude-opus-4": 1024,
    "claude-sonnet-4-6": 2048,
    "claude-sonnet-4": 1024,
    "claude-haiku-4-5": 4096,
    "claude-3-7-sonnet": 1024,
    "claude-3-5-haiku": 2048,
    "claude-3-haiku": 2048,
}


@dataclass(frozen=True)
class CacheRules:
    lookback_blocks: int = 20
    # The floor for a model that `min_cacheable_by_model` does not name.
    min_cacheable_tokens: int = 1024
    min_cacheable_by_model: Mapping[str, int] = field(
        default_factory=lambda: dict(MIN_CACHEABLE_BY_MODEL)
    )
    max_breakpoints: int = 4

    def minimum_for(self, model: str) -> int:
        best = ""
        for prefix in self.min_cacheable_by_model:
            if model.startswith(prefix) and len(prefix) > len(best):
                best = prefix
        return self.min_cacheable_by_model[best] if best else self.min_cacheable_tokens


@dataclass(frozen=True)
class CacheUsage:
    input_tokens: int
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0
    ephemeral_5m_input_tokens: int = 0
    ephemeral_1h_input_tokens: int = 0

    @property
    def prompt_tokens(self) -> int:
        return self.input_tokens + self.cache_creation_input_tokens + self.cache_read_input_tokens

    def as_api(self) -> dict[str, Any]:
        """The usage fields as the service reports them (without output_tokens)."""
        return {
            "input_tokens": self.input_tokens,
            "cache_creation_input_tokens": self.cache_creation_input_tokens,
            "cache_read_input_tokens": self.cache_read_input_tokens,
            "cache_creation": {
                "ephemeral_5m_input_tokens": self.ephemeral_5m_input_tokens,
                "ephemeral_1h_input_tokens": self.ephemeral_1h_input_tokens,
            },
        }


@dataclass(frozen=True)
class CacheAccount:
    """The cache outcome of one request, with what explains it."""

    usage: CacheUsage
    layout: Layout
    read_through: str | None = None  # label of the last block read from the cache
    written: tuple[str, ...] = ()  # breakpoints that wrote an entry
    too_short: tuple[str, ...] = ()  # breakpoints below the minimum cacheable length
    expired: str | None = None  # a longer prefix that was cached but had expired
    divergence: Divergence | None = None  # vs the previous request of the same panel

    def explain(self) -> str:
        """One line saying what was read, written and why the rest was not, for logs."""
        u = self.usage
        parts = [f"read {u.cache_read_input_tokens} through {self.read_through or '-'}"]
        parts.append(f"wrote {u.cache_creation_input_tokens} at {', '.join(self.written) or '-'}")
        parts.append(f"uncached {u.input_tokens}")
        if self.too_short:
            parts.append(f"below minimum: {', '.join(self.too_short)}")
        if self.expired:
            parts.append(f"expired through {self.expired}")
        if self.divergence is not None:
            d = self.divergence
            change = f"{d.previous!r} -> {d.current!r}"
            parts.append(f"differs from previous at byte {d.offset} in {d.unit}: {change}")
        return "; ".join(parts)


@dataclass
class _Entry:
    expires_at: float
    ttl: Ttl


class PromptCache:
    """The service's prompt cache, as state plus one accounting step per request."""

    def __init__(
        self, rules: CacheRules | None = None, counter: TokenCounter | None = None
    ) -> None:
        self.rules = rules or CacheRules()
        self.counter: TokenCounter = counter or ApproxTokenCounter()
        self._entries: dict[bytes, _Entry] = {}

    def layout(self, body: Mapping[str, Any]) -> Layout:
        layout = layout_of(body, self.counter)
        if body.get("cache_control") and layout.units:
            last = layout.units[-1]
            ttl: Ttl = "1h" if body["cache_control"].get("ttl") == "1h" else "5m"
            layout = replace(layout, units=(*layout.units[:-1], replace(last, ttl=ttl)))
        return layout

    def check(self, layout: Layout) -> None:
        """Raise `CacheRuleError` for a request the service would refuse; changes nothing."""
        found = sum(1 for u in layout.units if u.ttl is not None)
        if found > self.rules.max_breakpoints:
            raise CacheRuleError(
                f"A maximum of {self.rules.max_breakpoints} blocks with cache_control may be "
                f"provided. Found {found}."
            )
        # The service keeps longer-lived entries in front: a 1-hour breakpoint may not come
        # after a 5-minute one in cache order (tools, then system, then messages).
        short = next((u for u in layout.units if u.ttl == "5m"), None)
        if short is not None:
            late = next(
                (u for u in layout.units[layout.units.index(short) :] if u.ttl == "1h"), None
            )
            if late is not None:
                raise CacheRuleError(
                    f"cache_control with ttl '1h' at {late.label} comes after a 5-minute "
                    f"breakpoint at {short.label}; 1-hour breakpoints must all come first"
                )

    def account(
        self, body: Mapping[str, Any], *, now: float, previous: Layout | None = None
    ) -> CacheAccount:
        """Account one request and update the cache (raises `CacheRuleError` first if refused)."""
        return self.account_layout(self.layout(body), now=now, previous=previous)

    def account_layout(
        self, layout: Layout, *, now: float, previous: Layout | None = None
    ) -> CacheAccount:
        self.check(layout)
        units = layout.units
        points = [i for i, u in enumerate(units) if u.ttl is not None]
        digests, cumulative = _prefixes(layout)
        hit, expired = -1, -1
        for b in points:
            for j in range(b, max(-1, b - self.rules.lookback_blocks - 1), -1):
                entry = self._entries.get(digests[j])
                if entry is None:
                    continue
                if entry.expires_at > now:
                    hit = max(hit, j)
                    break
                expired = max(expired, j)
        read = cumulative[hit] if hit >= 0 else 0
        if hit >= 0:
            self._refresh(digests[hit], now)
        written: list[str] = []
        too_short: list[str] = []
        created: dict[Ttl, int] = {"5m": 0, "1h": 0}
        mark = read
        minimum = self.rules.minimum_for(layout.model)
        for b in points:
            ttl = units[b].ttl or "5m"
            if b <= hit:
                self._refresh(digests[b], now)
            elif cumulative[b] < minimum:
                too_short.append(units[b].label)
            else:
                created[ttl] += cumulative[b] - mark
                mark = cumulative[b]
                self._entries[digests[b]] = _Entry(now + TTL_SECONDS[ttl], ttl)
                written.append(units[b].label)
        creation = created["5m"] + created["1h"]
        usage = CacheUsage(
            input_tokens=layout.total_tokens - read - creation,
            cache_creation_input_tokens=creation,
            cache_read_input_tokens=read,
            ephemeral_5m_input_tokens=created["5m"],
            ephemeral_1h_input_tokens=created["1h"],
        )
        return CacheAccount(
            usage=usage,
            layout=layout,
            read_through=units[hit].label if hit >= 0 else None,
            written=tuple(written),
            too_short=tuple(too_short),
            expired=units[expired].label if expired > hit else None,
            divergence=first_divergence(previous, layout) if previous is not None else None,
        )

    def _refresh(self, digest: bytes, now: float) -> None:
        entry = self._entries.get(digest)
        if entry is not None and entry.expires_at > now:
            entry.expires_at = now + TTL_SECONDS[entry.ttl]


def _prefixes(layout: Layout) -> tuple[list[bytes], list[int]]:
    """The digest and the token count of the prompt prefix ending at each unit."""
    running = hashlib.sha256(layout.model.encode() + b"\0")
    digests: list[bytes] = []
    cumulative: list[int] = []
    tokens = 0
    for unit in layout.units:
        # Length-prefixed, so two different splits of the same bytes never collide.
        running.update(len(unit.key).to_bytes(8, "big") + unit.key)
        digests.append(running.copy().digest())
        tokens += unit.tokens
        cumulative.append(tokens)
    return digests, cumulative


def account_requests(
    requests: Iterable[tuple[float, Mapping[str, Any]]],
    *,
    rules: CacheRules | None = None,
    counter: TokenCounter | None = None,
) -> list[CacheAccount]:
    """Account a sequence of `(time, body)` requests of one panel, in order, from a cold cache."""
    cache = PromptCache(rules, counter)
    accounts: list[CacheAccount] = []
    for now, body in requests:
        previous = accounts[-1].layout if accounts else None
        accounts.append(cache.account(body, now=now, previous=previous))
    return accounts


class ManualClock:
    """A clock for tests: time stands still until `advance()` moves it."""

    def __init__(self, start: float = 0.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds
