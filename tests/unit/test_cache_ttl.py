"""The prompt-cache TTL chosen per cache point from the session's rhythm (issue 33): the policy on its own,
then through ChatService with a model that applies the provider's cache rules (bench/prompt_cache_simulator)."""

from __future__ import annotations

import pytest

from agent_memory.domain.sessions.cache_ttl import (
    FIRST_TURN,
    PromptSizes,
    TtlChoice,
    choose_ttls,
    non_increasing,
    previous_end_ttl,
)
from agent_memory.domain.sessions.config import PromptCacheConfig, price
from agent_memory.domain.sessions.ports import Usage
from bench.prompt_cache_simulator import PromptCacheSimulator
from tests.contract.chat_fakes import FakeChatModel, build_stack, request_blocks, text_reply

T, NS = "acme", "/projects/billing"
SONNET_45 = PromptCacheConfig().profile("anthropic.claude-sonnet-4-5-20250929-v1:0")
SONNET_37 = PromptCacheConfig().profile("anthropic.claude-3-7-sonnet-20250219-v1:0")
SIZES = PromptSizes(system=1250, history=800, increment=80)
FIVE, HOUR = TtlChoice("5m", "5m"), TtlChoice("1h", "1h")
NOTES = [f"Billing note {i}: invoices for region {i} run at 0{i}:00 UTC with retries." for i in range(10)]


# ---------------------------------------------------------------- the policy


def test_given_fixed_mode_then_every_point_uses_it_whatever_the_gaps():
    assert choose_ttls("5m", SONNET_45, HOUR, [900.0], SIZES) == FIVE
    assert choose_ttls("1h", SONNET_45, FIVE, [30.0], SIZES) == HOUR


def test_given_model_without_the_1_hour_ttl_then_auto_stays_on_the_default():
    assert not SONNET_37.supports_1h_ttl
    assert choose_ttls("auto", SONNET_37, None, [], SIZES) == FIVE
    assert choose_ttls("auto", SONNET_37, FIVE, [900.0, 1200.0], SIZES) == FIVE


def test_given_first_turn_then_history_starts_with_the_default_and_the_snapshot_with_an_hour():
    assert choose_ttls("auto", SONNET_45, None, [], SIZES) == FIRST_TURN == TtlChoice("1h", "5m")


def test_given_a_pause_longer_than_5_minutes_then_the_expired_history_moves_to_an_hour():
    # the 5-minute history expired (it is written again anyway): the gaps say an hour pays
    assert choose_ttls("auto", SONNET_45, TtlChoice("1h", "5m"), [60.0, 400.0], SIZES) == HOUR


def test_given_a_warm_5_minute_history_then_it_does_not_move_up_before_it_expires():
    # gaps so far argue for an hour, but the previous end is still cached for 5 minutes: moving it up now
    # would write what could be read; it waits for an expiry
    gaps = [400.0, 500.0, 600.0, 30.0]
    assert choose_ttls("auto", SONNET_45, TtlChoice("1h", "5m"), gaps, SIZES) == TtlChoice("1h", "5m")


def test_given_a_warm_1_hour_snapshot_then_it_stays_even_when_short_gaps_favour_5_minutes():
    gaps = [30.0] * 10
    choice = choose_ttls("auto", SONNET_45, HOUR, gaps, SIZES)
    assert choice.system == "1h"
    # the history's new end is written anyway: it may come down at once (increments cost 1.25x, not 2x)
    assert choice.history == "5m"


def test_given_steady_short_gaps_from_a_5_minute_start_then_nothing_switches():
    assert choose_ttls("auto", SONNET_45, FIVE, [60.0] * 5, SIZES) == FIVE


def test_given_pause_longer_than_an_hour_then_everything_is_written_again_at_the_cheaper_5_minutes():
    # every observed gap is over an hour: a 1-hour write would never be read
    assert choose_ttls("auto", SONNET_45, HOUR, [4000.0, 3700.0], SIZES) == FIVE


def test_given_any_choice_then_request_ttls_are_non_increasing_system_then_messages():
    gap_sets = [[30.0], [400.0], [4000.0], [30.0, 400.0], [400.0, 30.0], [30.0] * 6, [4000.0, 30.0]]
    for previous in (FIVE, HOUR, TtlChoice("1h", "5m"), None):
        for gaps in gap_sets:
            choice = choose_ttls("auto", SONNET_45, previous, gaps, SIZES)
            before = previous_end_ttl(choice, previous, gaps[-1])
            assert non_increasing([choice.system, before, choice.history]), (previous, gaps, choice)


def test_previous_end_keeps_its_ttl_while_read_and_takes_the_new_one_once_expired():
    assert previous_end_ttl(TtlChoice("1h", "5m"), HOUR, 30.0) == "1h"  # read: same point, same TTL
    assert previous_end_ttl(HOUR, TtlChoice("1h", "5m"), 400.0) == "1h"  # expired: written again


# ---------------------------------------------------------------- prices by TTL


def test_given_bedrock_cache_details_then_1_hour_writes_are_priced_at_2x_and_5_minute_at_1_25x():
    usage = Usage.from_bedrock(
        {
            "inputTokens": 10,
            "outputTokens": 0,
            "cacheReadInputTokens": 0,
            "cacheWriteInputTokens": 1500,
            "cacheDetails": [{"ttl": "1h", "inputTokens": 1000}, {"ttl": "5m", "inputTokens": 500}],
        }
    )
    assert usage.cache_write_1h_input_tokens == 1000 and usage.write_ttls_known
    cost = price(SONNET_45, usage)
    assert cost.cache_write_usd == pytest.approx((1000 * 2.0 + 500 * 1.25) * 3.0e-6)


def test_given_no_cache_details_then_writes_are_priced_at_the_longest_ttl_of_the_request():
    usage = Usage(input_tokens=0, cache_write_input_tokens=1000).with_write_ttl("1h")
    assert price(SONNET_45, usage).cache_write_usd == pytest.approx(1000 * 2.0 * 3.0e-6)


# ---------------------------------------------------------------- through ChatService


def _stack(tmp_path, clock, model_id="anthropic.claude-sonnet-4-5-20250929-v1:0"):
    model = FakeChatModel(model_id=model_id, clock=clock, simulate_cache=PromptCacheSimulator(1024))
    stack = build_stack(tmp_path, clock, model)
    for note in NOTES:
        stack.files.add(T, NS, "memory", note)
    return model, stack


def _point_ttls(call) -> list[str]:
    """The TTLs of a request's cache points in request order (tools, system, messages)."""
    blocks = [*(call.tool_config or {}).get("tools", []), *call.system]
    blocks += [block for message in call.messages for block in message["content"]]
    return [block["cachePoint"].get("ttl", "5m") for block in blocks if "cachePoint" in block]


def test_given_auto_session_with_a_pause_then_history_moves_to_an_hour_without_losing_the_snapshot(
    tmp_path, clock
):
    model, stack = _stack(tmp_path, clock)
    session = stack.sessions.start(T, NS, actor="key:k1").session
    assert session.cache_ttl == "auto"
    model.script = [text_reply(f"answer {i}") for i in range(5)]

    results = []
    for gap_minutes in (0, 1, 7, 1, 20):  # a 7-minute pause, then 20 minutes
        clock.advance(minutes=gap_minutes)
        results.append(
            stack.chat.turn(T, session.id, f"question {len(results)}", actor="key:k1", can_write=True)
        )

    assert [r.cache_ttl for r in results] == [
        TtlChoice("1h", "5m"),
        TtlChoice("1h", "5m"),
        HOUR,  # the 5-minute history expired in the pause: written again anyway, now for an hour
        HOUR,
        HOUR,
    ]
    # the snapshot's 1-hour cache outlived the 7-minute pause: that turn read it and rewrote only the history
    blocks = request_blocks(model.calls[2])
    snapshot_prefix = sum(b.tokens for b in blocks[: len(model.calls[2].tool_config["tools"]) + 2])
    assert results[2].cache_break and results[2].usage.cache_read_input_tokens == snapshot_prefix
    # the 20-minute pause broke nothing: the 1-hour history was read whole
    assert not results[4].cache_break and results[4].usage.input_tokens == 0
    for call in model.calls:
        assert non_increasing(_point_ttls(call)), _point_ttls(call)
    totals = stack.sessions.get(T, session.id).usage
    assert (totals.snapshot_1h_turns, totals.history_1h_turns, totals.cache_ttl_switches) == (5, 3, 1)
    assert totals.cost_usd == pytest.approx(sum(r.cost.usd for r in results), abs=1e-6)
    assert totals.cost_without_cache_usd == pytest.approx(
        sum(r.cost.usd_without_cache for r in results), abs=1e-6
    )
    assert [t.cache_ttl.history for t in stack.sessions.history(T, session.id)] == [
        "5m",
        "5m",
        "1h",
        "1h",
        "1h",
    ]


def test_given_cache_expired_then_session_resumes_with_the_same_snapshot_bytes_one_write_then_reads(
    tmp_path, clock
):
    model, stack = _stack(tmp_path, clock)
    session = stack.sessions.start(T, NS, actor="key:k1").session
    model.script = [text_reply(f"answer {i}") for i in range(4)]
    first = stack.chat.turn(T, session.id, "hi", actor="key:k1", can_write=True)
    stack.files.add(T, NS, "memory", "Written during the session: reaches the next session only.")
    clock.advance(hours=3)  # every cache point has expired

    resumed = stack.chat.turn(T, session.id, "back again", actor="key:k1", can_write=True)
    clock.advance(minutes=1)
    after = [stack.chat.turn(T, session.id, f"and {i}", actor="key:k1", can_write=True) for i in range(2)]

    texts = [[block for block in call.system if "text" in block] for call in model.calls]
    assert all(blocks == texts[0] for blocks in texts)  # the same snapshot bytes, never re-frozen
    assert stack.sessions.get(T, session.id).snapshot_sha256 == session.snapshot_sha256
    assert resumed.cache_break and resumed.usage.cache_read_input_tokens == 0
    assert resumed.usage.cache_write_input_tokens > first.usage.cache_write_input_tokens
    for turn in after:
        assert not turn.cache_break and turn.usage.input_tokens == 0
        assert turn.usage.cache_read_input_tokens >= resumed.usage.cache_write_input_tokens


def test_given_model_without_the_1_hour_ttl_then_auto_requests_carry_no_ttl(tmp_path, clock):
    model, stack = _stack(tmp_path, clock, model_id="anthropic.claude-3-7-sonnet-20250219-v1:0")
    session = stack.sessions.start(T, NS, actor="key:k1").session
    model.script = [text_reply(f"answer {i}") for i in range(3)]
    for gap_minutes in (0, 10, 90):
        clock.advance(minutes=gap_minutes)
        result = stack.chat.turn(T, session.id, "hello", actor="key:k1", can_write=True)
        assert result.cache_ttl == FIVE
    for call in model.calls:
        points = [block for block in call.system if "cachePoint" in block]
        points += [b for m in call.messages for b in m["content"] if "cachePoint" in b]
        assert points and all(point == {"cachePoint": {"type": "default"}} for point in points)


def test_given_a_longer_expected_session_then_the_hour_pays_for_its_dearer_write():
    # one pause in two so far, a short history that expired: written now at 1.25x (5m) or 2x (1h); only a
    # session expected to go on long enough (and grow its history) makes the dearer write pay
    previous, gaps = TtlChoice("1h", "5m"), [60.0, 400.0]
    short = PromptSizes(system=1250, history=100, increment=80)
    assert choose_ttls("auto", SONNET_45, previous, gaps, short, min_horizon=2) == TtlChoice("1h", "5m")
    assert choose_ttls("auto", SONNET_45, previous, gaps, short, min_horizon=32) == HOUR
