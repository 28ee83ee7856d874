"""The clairvoyant lower bound of a session's prompt cost (bench/prompt_cache_bound.py, issue 33): its
arithmetic by hand, and that no policy run through the prompt-cache simulator pays less — whatever TTLs it
picks per cache point, with or without knowing the gaps."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import pytest

from agent_memory.domain.sessions.config import PromptCacheConfig
from bench.prompt_cache_bound import Request, cheapest_path, clairvoyant_bound
from bench.prompt_cache_simulator import CacheBlock, PromptCacheSimulator

SONNET_45 = PromptCacheConfig().profile("anthropic.claude-sonnet-4-5-20250929-v1:0")
SONNET_37 = PromptCacheConfig().profile("anthropic.claude-3-7-sonnet-20250219-v1:0")
START = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
PREFIX_TOKENS, TURN_TOKENS = 1500, 90


def test_steady_gaps_cost_one_write_then_reads_and_the_last_tokens_go_uncached():
    assert cheapest_path(SONNET_45, [60.0, 60.0, 60.0, None]) == pytest.approx(1.25 + 3 * 0.1)
    assert cheapest_path(SONNET_45, [None]) == 1.0  # never read again: a write would be pure premium


def test_a_gap_between_5_minutes_and_an_hour_costs_the_1_hour_write():
    assert cheapest_path(SONNET_45, [600.0, 60.0, None]) == pytest.approx(2.0 + 2 * 0.1)
    # without the 1-hour TTL the cheapest is to send it uncached, then write it for the short gap
    assert cheapest_path(SONNET_37, [600.0, 60.0, None]) == pytest.approx(1.0 + 1.25 + 0.1)


def test_after_a_pause_longer_than_every_ttl_the_token_is_paid_again():
    # written, read (nothing survives the pause), written again, read
    assert cheapest_path(SONNET_45, [60.0, 4000.0, 60.0, None]) == pytest.approx(1.25 + 0.1 + 1.25 + 0.1)


def _session(gaps: list[float]) -> tuple[list[list[CacheBlock]], list[datetime]]:
    """Requests of a chat whose prompt grows by one turn a request: a fixed prefix, then one block a turn."""
    requests, times, at = [], [], START
    for index in range(len(gaps) + 1):
        blocks = [CacheBlock(b"tools+system+snapshot", PREFIX_TOKENS)]
        blocks += [CacheBlock(f"turn {n}".encode(), TURN_TOKENS) for n in range(index + 1)]
        requests.append(blocks)
        times.append(at)
        if index < len(gaps):
            at += timedelta(seconds=gaps[index])
    return requests, times


def _simulated_units(requests, times, ttls) -> float:
    """What the simulator bills when request i carries a system cache point with ttls[i][0], one at the
    previous request's end (read) and one at its own end with ttls[i][1] (None: no cache point there)."""
    cache = PromptCacheSimulator(SONNET_45.min_cacheable_tokens)
    units = 0.0
    for blocks, at, (system_ttl, end_ttl) in zip(requests, times, ttls, strict=True):
        marked = list(blocks)
        marked[0] = CacheBlock(blocks[0].data, blocks[0].tokens, system_ttl)
        if len(marked) > 2:
            marked[-2] = CacheBlock(marked[-2].data, marked[-2].tokens, "5m")
        marked[-1] = CacheBlock(marked[-1].data, marked[-1].tokens, end_ttl)
        outcome = cache.send(marked, at)
        units += outcome.span_cost_units(0, outcome.total_tokens, SONNET_45)
    return units


def _bound(requests, times):
    return clairvoyant_bound(
        [
            Request(at, tuple((b.data, b.tokens) for b in blocks))
            for blocks, at in zip(requests, times, strict=True)
        ],
        SONNET_45,
    )


HUMAN = [40.0, 90.0, 420.0, 30.0, 2000.0, 15.0, 8000.0, 60.0, 120.0, 310.0, 45.0]


@pytest.mark.parametrize("gaps", [[60.0] * 11, [301.0] * 11, [3601.0] * 11, HUMAN])
def test_no_policy_through_the_simulator_pays_less_than_the_bound(gaps):
    requests, times = _session(gaps)
    bound = _bound(requests, times)
    assert bound is not None and bound.sent == sum(sum(b.tokens for b in r) for r in requests)
    rng = random.Random(33)
    choices = [("5m", "5m"), ("1h", "5m"), ("1h", "1h"), ("1h", None), ("5m", None), (None, None)]
    policies = [[choice] * len(requests) for choice in choices]
    policies += [[rng.choice(choices) for _ in requests] for _ in range(200)]
    # the clairvoyant choice: the shortest TTL that covers the next gap, no write where none can
    clairvoyant = [("5m" if gap < 300 else "1h") if gap < 3600 else None for gap in gaps]
    policies.append([(ttl, ttl) for ttl in [*clairvoyant, None]])
    costs = [_simulated_units(requests, times, ttls) for ttls in policies]
    assert min(costs) >= bound.units - 1e-9
    if max(gaps) < 300 or gaps == HUMAN:
        assert min(costs) == pytest.approx(bound.units, rel=0.02)  # tight where the layout allows it


def test_steady_session_bound_is_the_5_minute_floor_less_the_last_turns_premium():
    requests, times = _session([60.0] * 19)
    bound = _bound(requests, times)
    fixed_5m = _simulated_units(requests, times, [("5m", "5m")] * 20)
    assert bound is not None
    assert bound.units == pytest.approx(fixed_5m - 0.25 * TURN_TOKENS)  # the last turn need not be written
    assert bound.pause_units == 0


def test_pauses_longer_than_every_ttl_are_reported_as_their_own_share():
    requests, times = _session([60.0, 60.0, 4000.0, 60.0])
    bound = _bound(requests, times)
    assert bound is not None
    # the 1,680 tokens cached before the pause's request are written again after it (1.25x) where they would
    # have been read (0.1x); the request before the pause sends its new turn uncached (1x) instead of
    # writing it (1.25x), then writes it after the pause (1.25x) where it would have been read (0.1x)
    before, last = PREFIX_TOKENS + 2 * TURN_TOKENS, TURN_TOKENS
    assert bound.pause_units == pytest.approx(before * (1.25 - 0.1) + last * (1.0 + 1.25 - 1.25 - 0.1))


def test_a_gap_of_minutes_costs_the_1_hour_premium_of_the_newest_tokens_only():
    requests, times = _session([60.0, 600.0, 60.0])
    bound = _bound(requests, times)
    assert bound is not None and bound.pause_units == 0
    # what was read before the gap is covered by the request's new 1-hour cache point at no charge; only the
    # turn first sent in that request is written at 2x instead of 1.25x
    assert bound.long_write_units == pytest.approx(TURN_TOKENS * (2.0 - 1.25))
