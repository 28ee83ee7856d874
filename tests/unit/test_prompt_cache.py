"""The prompt-cache model: model table, prices, cache rules (byte-identical prefix, minimum, TTL, cache points),
the token estimator and the prefix monitor."""

from __future__ import annotations

import pytest

from agent_memory.domain.errors import UpstreamUnavailable, ValidationFailed
from agent_memory.domain.sessions.config import ModelProfile, PromptCacheConfig, price
from agent_memory.domain.sessions.ports import Usage
from agent_memory.domain.sessions.prompt_cache import CharTokenEstimator, PrefixMonitor, estimate_text_tokens
from bench.prompt_cache_simulator import CacheBlock, PromptCacheSimulator, converse_blocks

SONNET = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"


def block(text: str, tokens: int, cache_point=None) -> CacheBlock:
    return CacheBlock(text.encode(), tokens, cache_point)


# ---------------------------------------------------------------- model table and prices


@pytest.mark.parametrize(
    ("model_id", "minimum", "one_hour"),
    [
        (SONNET, 1024, True),
        ("anthropic.claude-sonnet-4-20250514-v1:0", 1024, False),
        ("global.anthropic.claude-haiku-4-5-20251001-v1:0", 4096, True),
        ("anthropic.claude-3-5-haiku-20241022-v1:0", 2048, False),
        ("anthropic.claude-opus-4-5-20251101-v1:0", 4096, True),
        ("anthropic.claude-opus-4-1-20250805-v1:0", 1024, False),
    ],
)
def test_given_bedrock_model_id_when_profiled_then_its_minimum_and_ttl_support(model_id, minimum, one_hour):
    profile = PromptCacheConfig().profile(model_id)
    assert profile.min_cacheable_tokens == minimum
    assert profile.supports_1h_ttl is one_hour


def test_given_unknown_model_then_fallback_profile_and_a_configured_table_wins():
    assert PromptCacheConfig().profile("vendor.unknown-model-v1").pattern == "*"
    custom = ModelProfile(
        pattern="vendor.*", min_cacheable_tokens=512, input_usd_per_mtok=1, output_usd_per_mtok=2
    )
    config = PromptCacheConfig(profiles=(custom,))
    assert config.profile("vendor.unknown-model-v1").min_cacheable_tokens == 512


def test_given_usage_when_priced_then_read_is_a_tenth_and_writes_cost_more_by_ttl():
    profile = PromptCacheConfig().profile(SONNET)
    unit = profile.input_usd_per_mtok / 1_000_000
    usage = Usage(
        input_tokens=1000, output_tokens=500, cache_read_input_tokens=20_000, cache_write_input_tokens=4000
    )

    five = price(profile, usage, "5m")
    hour = price(profile, usage, "1h")

    assert five.input_usd == pytest.approx(1000 * unit)
    assert five.cache_read_usd == pytest.approx(20_000 * unit * 0.1)
    assert five.cache_write_usd == pytest.approx(4000 * unit * 1.25)
    assert hour.cache_write_usd == pytest.approx(4000 * unit * 2.0)
    assert five.output_usd == pytest.approx(500 * profile.output_usd_per_mtok / 1_000_000)
    assert five.usd_without_cache == pytest.approx(25_000 * unit + five.output_usd)
    assert five.usd < five.usd_without_cache


# ---------------------------------------------------------------- cache rules


def test_given_identical_prefix_within_ttl_then_first_request_writes_and_the_next_reads(clock):
    cache = PromptCacheSimulator(min_cacheable_tokens=1024)
    request = [block("tools", 600), block("system+snapshot", 900, "5m"), block("user: hi", 20)]

    first = cache.send(request, clock.now())
    clock.advance(minutes=1)
    second = cache.send(request, clock.now())

    assert (first.read_tokens, first.write_tokens, first.uncached_tokens) == (0, 1500, 20)
    assert (second.read_tokens, second.write_tokens, second.uncached_tokens) == (1500, 0, 20)
    assert second.usage(7) == Usage(
        input_tokens=20, output_tokens=7, cache_read_input_tokens=1500, write_ttls_known=True
    )


def test_given_one_changed_byte_in_the_prefix_then_miss_and_rewrite(clock):
    cache = PromptCacheSimulator(min_cacheable_tokens=1024)
    cache.send([block("tools", 600), block("memory: A", 900, "5m")], clock.now())

    changed = cache.send([block("tools", 600), block("memory: B", 900, "5m")], clock.now())

    assert changed.read_tokens == 0 and changed.write_tokens == 1500


def test_given_prefix_below_minimum_then_nothing_is_cached(clock):
    cache = PromptCacheSimulator(min_cacheable_tokens=1024)
    request = [block("short system", 1000, "5m"), block("user", 10)]

    first = cache.send(request, clock.now())
    second = cache.send(request, clock.now())

    assert first.write_tokens == second.read_tokens == 0
    assert second.uncached_tokens == 1010


def test_given_ttl_when_idle_longer_then_expired_but_each_hit_refreshes_it(clock):
    cache = PromptCacheSimulator(min_cacheable_tokens=100)
    request = [block("prefix", 2000, "5m")]
    cache.send(request, clock.now())

    clock.advance(minutes=4)
    assert cache.send(request, clock.now()).read_tokens == 2000  # refreshed: lives until minute 9
    clock.advance(minutes=4)
    assert cache.send(request, clock.now()).read_tokens == 2000
    clock.advance(minutes=5, seconds=1)
    assert cache.send(request, clock.now()).write_tokens == 2000


def test_given_one_hour_cache_point_then_it_survives_a_long_pause(clock):
    cache = PromptCacheSimulator(min_cacheable_tokens=100)
    request = [block("prefix", 2000, "1h")]
    written = cache.send(request, clock.now())
    clock.advance(minutes=50)

    assert written.written_ttls == ((0, 2000, "1h"),)
    assert cache.send(request, clock.now()).read_tokens == 2000


def test_given_two_cache_points_then_longest_cached_prefix_is_read_and_the_rest_written(clock):
    cache = PromptCacheSimulator(min_cacheable_tokens=1024)
    cache.send([block("tools+base", 1500, "5m"), block("memory v1", 800, "5m")], clock.now())

    outcome = cache.send([block("tools+base", 1500, "5m"), block("memory v2", 800, "5m")], clock.now())

    assert (outcome.read_tokens, outcome.write_tokens) == (1500, 800)
    assert outcome.split(1500, 2300) == (0, 800, 0)


def test_given_more_than_four_cache_points_then_refused(clock):
    cache = PromptCacheSimulator(min_cacheable_tokens=1)
    with pytest.raises(ValidationFailed, match="at most 4"):
        cache.send([block(f"b{i}", 10, "5m") for i in range(5)], clock.now())


def test_given_twenty_turns_on_a_frozen_prefix_then_memory_costs_the_documented_floor(clock):
    profile = PromptCacheConfig().profile(SONNET)
    cache = PromptCacheSimulator(profile.min_cacheable_tokens)
    memory_start, memory_end = 600, 1500
    units = 0.0
    for turn in range(20):
        request = [block("tools", 600), block("memory", 900, "5m"), block(f"user {turn}", 30)]
        outcome = cache.send(request, clock.now())
        units += outcome.span_cost_units(memory_start, memory_end, profile)
        clock.advance(minutes=1)

    share = units / (20 * (memory_end - memory_start))

    assert share == pytest.approx((1.25 + 19 * 0.1) / 20)


# ---------------------------------------------------------------- token estimation and monitor


def test_given_text_when_estimated_then_four_latin_characters_or_one_cjk_character_per_token():
    assert estimate_text_tokens("a" * 400) == 100
    assert estimate_text_tokens("数据库迁移完成") == 7
    assert estimate_text_tokens("") == 0
    counter = CharTokenEstimator()
    message = {"role": "user", "content": [{"text": "a" * 40}]}
    assert counter.count([message]) == 3 + 10
    assert (
        counter.count([message], system=[{"text": "b" * 80}, {"cachePoint": {"type": "default"}}])
        == 3 + 10 + 20
    )


def _monitor(counter, *, ceiling=5000, exact=False, model=SONNET) -> PrefixMonitor:
    return PrefixMonitor(
        counter,
        model_id=model,
        profile=PromptCacheConfig().profile(model),
        tool_config={"tools": [{"toolSpec": {"name": "recall", "description": "x" * 400}}]},
        ceiling_tokens=ceiling,
        exact=exact,
    )


def test_given_small_prefix_when_assessed_then_warns_that_nothing_will_be_cached():
    system = [{"text": "base"}, {"text": "memory " * 10}, {"cachePoint": {"type": "default"}}]

    report = _monitor(CharTokenEstimator()).assess(system, "memory " * 10)

    assert report.method == "estimate"
    assert not report.cacheable
    assert report.prefix_tokens > report.snapshot_tokens > 0
    assert any("nothing will be cached" in warning for warning in report.warnings)
    assert report.as_dict()["min_cacheable_tokens"] == 1024


def test_given_large_snapshot_when_assessed_then_cacheable_and_flagged_above_ceiling():
    snapshot = "fact " * 2000  # 10,000 characters, about 2,500 tokens
    system = [{"text": "base"}, {"text": snapshot}, {"cachePoint": {"type": "default"}}]

    report = _monitor(CharTokenEstimator(), ceiling=2000).assess(system, snapshot)

    assert report.cacheable
    assert report.above_ceiling
    assert report.snapshot_tokens == estimate_text_tokens(snapshot)
    assert any("ceiling" in warning for warning in report.warnings)


class FailingCounter:
    def count(self, messages, *, system=None, tool_config=None) -> int:
        raise UpstreamUnavailable("CountTokens is not available for this model")


def test_given_exact_counter_failing_when_assessed_then_estimates_and_says_so():
    snapshot = "fact " * 400
    system = [{"text": "base"}, {"text": snapshot}, {"cachePoint": {"type": "default"}}]

    report = _monitor(FailingCounter(), exact=True).assess(system, snapshot)

    assert report.method == "estimate"
    assert report.snapshot_tokens == estimate_text_tokens(snapshot)
    assert "exact token count unavailable" in report.warnings[0]


def test_given_one_hour_ttl_on_a_model_without_it_then_warned():
    system = [{"text": "base"}, {"text": "memory"}, {"cachePoint": {"type": "default", "ttl": "1h"}}]

    old_model = _monitor(CharTokenEstimator(), model="anthropic.claude-3-5-haiku-20241022-v1:0").assess(
        system, "m"
    )
    new_model = _monitor(CharTokenEstimator()).assess(system, "m")

    assert any("1-hour cache TTL" in warning for warning in old_model.warnings)
    assert not any("1-hour" in warning for warning in new_model.warnings)


def test_given_cached_entry_further_back_than_the_lookback_then_missed_unless_a_cache_point_is_near(clock):
    cache = PromptCacheSimulator(min_cacheable_tokens=10, lookback_blocks=20)
    head = [CacheBlock(f"block {i}".encode(), 5) for i in range(4)]
    head[-1] = CacheBlock(head[-1].data, 5, "5m")
    assert cache.send(head, clock.now()).write_tokens == 20
    tail = [CacheBlock(f"more {i}".encode(), 1) for i in range(25)]
    plain = [CacheBlock(block.data, block.tokens) for block in head]

    # a cache point 25 blocks after the cached one does not find it (the provider looks back 20 blocks)
    far = cache.send([*plain, *tail[:-1], CacheBlock(tail[-1].data, 1, "5m")], clock.now())
    assert far.read_tokens == 0
    # 20 blocks back it is found; so it is with a second cache point on the cached position itself
    near = cache.send([*plain, *tail[:19], CacheBlock(tail[19].data, 1, "5m")], clock.now())
    assert near.read_tokens == 20
    fresh = PromptCacheSimulator(min_cacheable_tokens=10, lookback_blocks=20)
    fresh.send(head, clock.now())
    both = fresh.send([*head, *tail[:-1], CacheBlock(tail[-1].data, 1, "5m")], clock.now())
    assert (both.read_tokens, both.write_tokens) == (20, 25)


def test_given_cache_point_moved_then_prefix_bytes_unchanged_and_read(clock):
    cache = PromptCacheSimulator(min_cacheable_tokens=1)
    tools = {"tools": [{"toolSpec": {"name": "recall"}}]}
    system = [{"text": "base " * 100}, {"cachePoint": {"type": "default"}}]
    first = [{"role": "user", "content": [{"text": "hi"}, {"cachePoint": {"type": "default"}}]}]
    written = cache.send(converse_blocks(tools, system, first), clock.now())
    second = [
        {"role": "user", "content": [{"text": "hi"}, {"cachePoint": {"type": "default"}}]},
        {"role": "assistant", "content": [{"text": "hello"}]},
        {"role": "user", "content": [{"text": "more"}, {"cachePoint": {"type": "default"}}]},
    ]
    outcome = cache.send(converse_blocks(tools, system, second), clock.now())
    assert outcome.read_tokens == written.write_end and outcome.uncached_tokens == 0
    third = [*second[:2], {"role": "user", "content": [{"text": "more"}]}]
    third[0] = {"role": "user", "content": [{"text": "hi"}]}  # the earlier cache point removed
    third.append({"role": "assistant", "content": [{"text": "ok"}]})
    third.append({"role": "user", "content": [{"text": "end"}, {"cachePoint": {"type": "default"}}]})
    later = cache.send(converse_blocks(tools, system, third), clock.now())
    assert later.read_tokens == outcome.total_tokens  # found by the lookback, no cache point needed there
    with pytest.raises(ValidationFailed):
        converse_blocks(None, [{"cachePoint": {"type": "default"}}], [])
