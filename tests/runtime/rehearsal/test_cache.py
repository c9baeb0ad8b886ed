"""Prompt-cache accounting, layout, divergence and pricing: pure, on an injected clock."""

from __future__ import annotations

from typing import Any

import pytest

from runtime.rehearsal import (
    ApproxTokenCounter,
    CacheRuleError,
    CacheRules,
    CacheUsage,
    ManualClock,
    PromptCache,
    account_requests,
    cost_usd,
    rates_for,
)
from runtime.rehearsal.layout import first_divergence, layout_of


class CharCounter:
    """One token per character: keeps the arithmetic of these tests readable."""

    def count(self, text: str) -> int:
        return len(text)


# One floor for every model, so the arithmetic does not depend on the per-model table.
RULES = CacheRules(min_cacheable_tokens=100, min_cacheable_by_model={})
CC: dict[str, Any] = {"type": "ephemeral"}


def block(text: str, *, cc: dict[str, Any] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "text", "text": text}
    if cc is not None:
        out["cache_control"] = cc
    return out


def request(*blocks: dict[str, Any], system: str = "S" * 500, **extra: Any) -> dict[str, Any]:
    return {
        "model": "claude-opus-5-5",
        "system": [block(system, cc=CC)],
        "messages": [{"role": "user", "content": list(blocks)}],
        **extra,
    }


def cache(rules: CacheRules = RULES) -> PromptCache:
    return PromptCache(rules, CharCounter())


def test_first_request_writes_and_an_identical_one_reads() -> None:
    c = cache()
    body = request(block("a" * 300, cc=CC), block("tail"))
    first = c.account(body, now=0).usage
    assert first == CacheUsage(4, 800, 0, 800, 0)
    second = c.account(body, now=1)
    assert second.usage == CacheUsage(4, 0, 800, 0, 0)
    assert second.read_through == "messages[0].content[0]"
    assert second.usage.prompt_tokens == second.layout.total_tokens


def test_growing_conversation_reads_the_old_prefix_and_writes_the_new_part() -> None:
    c = cache()
    c.account(request(block("a" * 300, cc=CC), block("tail")), now=0)
    grown = c.account(request(block("a" * 300), block("b" * 200, cc=CC), block("tail2")), now=1)
    assert grown.usage == CacheUsage(5, 200, 800, 200, 0)
    assert grown.written == ("messages[0].content[1]",)


def test_prefixes_below_the_minimum_are_not_cached() -> None:
    c = cache(CacheRules(min_cacheable_tokens=1024, min_cacheable_by_model={}))
    body = request(block("a" * 300, cc=CC), system="S" * 100)
    account = c.account(body, now=0)
    assert account.usage == CacheUsage(400)
    assert account.too_short == ("system[0]", "messages[0].content[0]")
    assert c.account(body, now=1).usage.cache_read_input_tokens == 0


def test_minimum_can_be_set_per_model_prefix() -> None:
    rules = CacheRules(
        min_cacheable_tokens=1024,
        min_cacheable_by_model={"claude-opus": 512, "claude-opus-5-5": 200},
    )
    assert rules.minimum_for("claude-opus-5-5") == 200
    assert rules.minimum_for("claude-opus-5") == 512
    assert rules.minimum_for("claude-haiku-5-5") == 1024


@pytest.mark.parametrize(
    ("model", "floor"),
    [
        ("claude-opus-4-7", 4096),
        ("claude-opus-4-5-20251101", 4096),
        ("claude-opus-4-1", 1024),
        ("claude-sonnet-4-6", 2048),
        ("claude-sonnet-4-5", 1024),
        ("claude-haiku-4-5", 4096),
        ("claude-opus-5-5", 512),
        ("some-other-model", 1024),
    ],
)
def test_the_default_minimum_follows_the_model(model: str, floor: int) -> None:
    assert CacheRules().minimum_for(model) == floor
    c = PromptCache(counter=CharCounter())
    body = request(block("q"), system="S" * (floor - 1))
    body["model"] = model
    assert c.account(body, now=0).usage.cache_creation_input_tokens == 0
    body["system"][0]["text"] = "S" * floor
    assert c.account(body, now=1).usage.cache_creation_input_tokens == floor


@pytest.mark.parametrize(("later_breakpoint", "hits"), [(25, True), (26, False)])
def test_lookback_reaches_twenty_blocks_before_a_breakpoint(
    later_breakpoint: int, hits: bool
) -> None:
    c = cache()

    def body(at: int) -> dict[str, Any]:
        blocks = [block(f"{i:03d}" + "x" * 97, cc=CC if i == at else None) for i in range(30)]
        return {"model": "m", "messages": [{"role": "user", "content": blocks}]}

    c.account(body(5), now=0)  # writes the prefix through block 5 (600 tokens)
    account = c.account(body(later_breakpoint), now=1)
    # Block 25 is 20 blocks after block 5: within reach. Block 26 is 21 blocks after it.
    assert account.usage.cache_read_input_tokens == (600 if hits else 0)
    assert account.read_through == ("messages[0].content[5]" if hits else None)


def test_five_minute_entries_expire_on_the_clock() -> None:
    clock = ManualClock()
    c = cache()
    body = request(block("q"))
    c.account(body, now=clock())
    clock.advance(299)
    assert c.account(body, now=clock()).usage.cache_read_input_tokens == 500
    clock.advance(301)  # 301 s after the read that refreshed it
    expired = c.account(body, now=clock())
    assert expired.usage.cache_read_input_tokens == 0
    assert expired.usage.cache_creation_input_tokens == 500
    assert expired.expired == "system[0]"


def test_a_read_refreshes_the_entry() -> None:
    c = cache()
    body = request(block("q"))
    c.account(body, now=0)
    c.account(body, now=200)  # refreshed: now lives until 500
    assert c.account(body, now=450).usage.cache_read_input_tokens == 500


def test_one_hour_entries_outlive_five_minutes_and_are_billed_apart() -> None:
    c = cache()
    body = request(block("q"), system="S" * 500)
    body["system"][0]["cache_control"] = {"type": "ephemeral", "ttl": "1h"}
    first = c.account(body, now=0).usage
    assert (first.ephemeral_1h_input_tokens, first.ephemeral_5m_input_tokens) == (500, 0)
    assert c.account(body, now=3000).usage.cache_read_input_tokens == 500
    assert c.account(body, now=3000 + 3601).usage.cache_read_input_tokens == 0


def test_cache_control_is_not_part_of_the_key() -> None:
    c = cache()
    c.account(request(block("a" * 300, cc=CC), block("x")), now=0)
    moved = request(block("a" * 300, cc={"type": "ephemeral", "ttl": "1h"}), block("x", cc=CC))
    moved["system"][0]["cache_control"] = {"type": "ephemeral", "ttl": "1h"}  # 1-hour ones first
    assert c.account(moved, now=1).usage.cache_read_input_tokens == 800


def test_more_than_four_breakpoints_is_refused_before_anything_changes() -> None:
    c = cache()
    body = request(*(block(f"b{i}", cc=CC) for i in range(4)))
    with pytest.raises(CacheRuleError, match="A maximum of 4 blocks with cache_control"):
        c.account(body, now=0)
    assert c.account(request(block("b0")), now=0).usage.cache_read_input_tokens == 0


def test_billing_header_is_outside_the_key_but_billed() -> None:
    c = cache()

    def body(fingerprint: str) -> dict[str, Any]:
        billing = block(f"x-anthropic-billing-header: cc_version=2.1.332.{fingerprint};")
        return {**request(block("q")), "system": [billing, block("S" * 500, cc=CC)]}

    c.account(body("aaa"), now=0)
    second = c.account(body("bbb"), now=1)
    assert second.usage.cache_read_input_tokens == 500
    assert (
        second.usage.input_tokens == len("x-anthropic-billing-header: cc_version=2.1.332.bbb;") + 1
    )


def test_thinking_change_invalidates_messages_but_not_system() -> None:
    c = cache()
    c.account(request(block("a" * 300, cc=CC), thinking={"type": "adaptive"}), now=0)
    changed = c.account(request(block("a" * 300, cc=CC), thinking={"type": "disabled"}), now=1)
    assert changed.usage.cache_read_input_tokens == 500
    assert changed.read_through == "system[0]"


def test_top_level_cache_control_marks_the_last_block() -> None:
    c = cache()
    body = {"model": "m", "cache_control": CC, "messages": [{"role": "user", "content": "z" * 200}]}
    assert c.account(body, now=0).written == ("messages[0]",)
    assert c.account(body, now=1).usage.cache_read_input_tokens == 200


def test_panels_share_the_cache() -> None:
    c = cache()
    body = request(block("q"))
    c.account(body, now=0)
    # Another panel's first request with the same prefix reads what the first one wrote.
    assert c.account(body, now=1, previous=None).usage.cache_read_input_tokens == 500


def test_divergence_points_at_the_first_differing_byte_and_its_block() -> None:
    counter = CharCounter()
    old = layout_of(request(block("same start, then A"), block("x")), counter)
    new = layout_of(request(block("same start, then B"), block("x")), counter)
    found = first_divergence(old, new)
    assert found is not None
    assert found.unit == "messages[0].content[0]"
    assert old.prompt_bytes[: found.offset] == new.prompt_bytes[: found.offset]
    assert old.prompt_bytes[found.offset] != new.prompt_bytes[found.offset]
    assert found.previous.startswith("A") and found.current.startswith("B")
    assert first_divergence(old, old) is None


def test_divergence_when_one_prompt_extends_the_other() -> None:
    counter = CharCounter()
    short = layout_of(request(block("a")), counter)
    longer = layout_of(request(block("a"), block("b")), counter)
    found = first_divergence(short, longer)
    assert found is not None
    assert found.offset == len(short.prompt_bytes)
    assert found.unit == "messages[0].content[1]"
    assert first_divergence(longer, short) is not None
    model = first_divergence(short, layout_of({**request(block("a")), "model": "other"}, counter))
    assert model is not None and model.unit == "model"


def test_account_requests_reports_usage_and_divergence_in_order() -> None:
    bodies = [
        request(block("a" * 300, cc=CC)),
        request(block("a" * 300, cc=CC)),
        request(block("b" * 300, cc=CC)),
    ]
    accounts = account_requests(
        list(zip([0.0, 1.0, 2.0], bodies, strict=True)), rules=RULES, counter=CharCounter()
    )
    assert [a.usage.cache_read_input_tokens for a in accounts] == [0, 800, 500]
    assert accounts[0].divergence is None and accounts[1].divergence is None
    assert (
        accounts[2].divergence is not None
        and accounts[2].divergence.unit == "messages[0].content[0]"
    )
    assert accounts[1].explain() == (
        "read 800 through messages[0].content[0]; wrote 0 at -; uncached 0"
    )
    explained = accounts[2].explain()
    assert explained.startswith("read 500 through system[0]; wrote 300 at messages[0].content[0]")
    offset = accounts[2].divergence.offset
    assert f"differs from previous at byte {offset} in messages[0].content[0]: 'aaa" in explained


def test_layout_units_in_cache_order_with_labels() -> None:
    body = {
        "model": "m",
        "tools": [{"name": "Bash", "input_schema": {}}],
        "system": "role doc",
        "messages": [
            {"role": "user", "content": "hi"},
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "t", "name": "Bash", "input": {"c": 1}}],
            },
            {"role": "system", "content": []},
        ],
    }
    layout = layout_of(body, CharCounter())
    assert [u.label for u in layout.units] == [
        "tools[0]",
        "system",
        "messages[0]",
        "messages[1].content[0]",
        "messages[2]",
    ]
    assert layout.units[3].tokens == len('Bash{"c":1}')


def test_default_counter_is_four_characters_a_token_rounded_up() -> None:
    counter = ApproxTokenCounter()
    assert [counter.count(t) for t in ["", "abc", "abcd", "abcde"]] == [0, 1, 1, 2]


def test_cost_uses_the_model_rates() -> None:
    usage = CacheUsage(1_000_000, 1_000_000, 1_000_000, 500_000, 500_000)
    # Opus 5.5: input 4, write 5m 5 and 1h 8, read 0.2, output 20 (USD per million).
    assert cost_usd("claude-opus-5-5", usage, 1_000_000) == pytest.approx(4 + 2.5 + 4 + 0.2 + 20)
    assert rates_for("claude-sonnet-4-6").input == 3
    assert rates_for("claude-sonnet-4-6").cache_read == pytest.approx(0.3)
    assert rates_for("some-haiku-model") == rates_for("claude-haiku-5-5")
    assert rates_for("unknown") == rates_for("claude-opus-5-5")


def test_a_one_hour_breakpoint_after_a_five_minute_one_is_refused() -> None:
    c = cache()
    body = request(block("a" * 300, cc={"type": "ephemeral", "ttl": "1h"}), block("tail"))
    with pytest.raises(CacheRuleError, match="1-hour breakpoints must all come first"):
        c.account(body, now=0)  # system[0] carries a 5-minute marker, before the 1-hour one
    assert c.account(request(block("q")), now=1).usage.cache_read_input_tokens == 0  # no state

    body["system"][0]["cache_control"] = {"type": "ephemeral", "ttl": "1h"}
    ok = c.account(body, now=2).usage  # the system prefix was written by the request before
    assert (ok.cache_read_input_tokens, ok.ephemeral_1h_input_tokens) == (500, 300)
    # A 5-minute breakpoint after 1-hour ones is what the service allows.
    mixed = request(block("a" * 300, cc={"type": "ephemeral", "ttl": "1h"}), block("b", cc=CC))
    mixed["system"][0]["cache_control"] = {"type": "ephemeral", "ttl": "1h"}
    assert c.account(mixed, now=3).usage.cache_read_input_tokens == 800
