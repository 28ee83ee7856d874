"""What the `auto` prompt-cache TTL costs through ChatService, against the fixed TTLs and the clairvoyant
bound (issue 33), on a model double that bills every request with the prompt-cache simulator. These fail if
the TTL policy regresses: `auto` more than 2 points above the better fixed TTL on a gap pattern (the issue's
limit, or the first turn's unavoidable gamble where that is more, see below), or a cost below what any policy
can pay (the simulator or the bound is wrong).

Why 2 points cannot hold for every prompt: before the first gap is known a policy writes the snapshot prefix
(S tokens) for 5 minutes or for an hour. An hour costs 0.75 S more than a fixed 5 minutes when no gap is
ever over 5 minutes; 5 minutes costs at least 1.15 S more than a fixed hour when every gap is (the prefix is
written again, at 2x, where it would have been read at 0.1x). So some fixed-gap pattern puts any policy at
least 0.75 S above the better fixed TTL: more than 2 points wherever S is more than 2.67 % of what the
session sends. The bench's session is just under (+1.96); this test's shorter one (no tool turns) is not."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from agent_memory.domain.sessions.config import PromptCacheConfig
from agent_memory.domain.sessions.ports import Usage
from bench.prompt_cache_bound import Request, clairvoyant_bound
from bench.prompt_cache_simulator import PromptCacheSimulator
from tests.contract.chat_fakes import FakeChatModel, build_stack, request_blocks, text_reply

T, NS = "acme", "/projects/billing"
MODEL = "anthropic.claude-sonnet-4-5-20250929-v1:0"
SONNET_45 = PromptCacheConfig().profile(MODEL)
NOTES = [f"Billing note {i}: invoices for region {i} run at 0{i}:00 UTC with retries." for i in range(10)]
HUMAN = [40, 90, 420, 30, 2000, 15, 75, 60, 120, 310, 45, 25, 610, 20, 95, 8000, 60, 35, 150]
"""19 gaps in seconds: mostly under 5 minutes, a few of 5-60 minutes, one pause over an hour."""


def _units(usage: Usage) -> tuple[float, int]:
    """The input's cost in tokens at the base price, and its tokens (what no caching pays)."""
    hour = usage.cache_write_1h_input_tokens
    cost = (
        usage.input_tokens
        + usage.cache_read_input_tokens * SONNET_45.cache_read_multiplier
        + hour * SONNET_45.write_multiplier("1h")
        + (usage.cache_write_input_tokens - hour) * SONNET_45.write_multiplier("5m")
    )
    return cost, usage.input_tokens + usage.cache_read_input_tokens + usage.cache_write_input_tokens


@dataclass(frozen=True)
class Run:
    share: float
    """Whole prompt, % of no caching."""
    bound: float
    """The clairvoyant bound, % of no caching."""
    prefix: float
    """The tools, base text and snapshot up to the system cache point, % of all the session sent."""


def _session(tmp_path, clock, ttl: str, gaps: list[float]) -> Run:
    """One session of len(gaps) + 1 turns through ChatService, priced by the prompt-cache simulator."""
    model = FakeChatModel(model_id=MODEL, clock=clock, simulate_cache=PromptCacheSimulator(1024))
    stack = build_stack(tmp_path / ttl, clock, model)
    for note in NOTES:
        stack.files.add(T, NS, "memory", note)
    session = stack.sessions.start(T, NS, actor="key:k1", cache_ttl=ttl).session  # type: ignore[arg-type]
    model.script = [text_reply(f"answer {i}: the invoice run stopped at the tax lookup.") for i in range(99)]
    times, spent, sent = [], 0.0, 0
    for turn, gap in enumerate([0.0, *gaps]):
        clock.advance(seconds=gap)
        times.append(clock.now())
        result = stack.chat.turn(
            T, session.id, f"question {turn} about invoices", actor="key:k1", can_write=True
        )
        cost, tokens = _units(result.usage)
        spent, sent = spent + cost, sent + tokens
    requests = [
        Request(at, tuple((block.data, block.tokens) for block in request_blocks(call)))
        for at, call in zip(times, model.calls, strict=True)
    ]
    bound = clairvoyant_bound(requests, SONNET_45)
    assert bound is not None and bound.sent == sent
    first = request_blocks(model.calls[0])
    system_point = next(index for index, block in enumerate(first) if block.cache_point)
    prefix = sum(block.tokens for block in first[: system_point + 1])
    return Run(100 * spent / sent, bound.share, 100 * prefix / sent)


@pytest.mark.parametrize(
    "gaps", [[60.0] * 19, [301.0] * 19, [3599.0] * 19, [3601.0] * 19, [float(g) for g in HUMAN]]
)
def test_auto_stays_within_2_points_of_the_better_fixed_ttl_or_the_first_turns_gamble_and_above_the_bound(
    tmp_path, clock, gaps
):
    runs = {ttl: _session(tmp_path, clock, ttl, gaps) for ttl in ("5m", "1h", "auto")}
    best = min(runs["5m"].share, runs["1h"].share)
    auto = runs["auto"]
    gamble = 0.75 * auto.prefix  # the 1-hour snapshot write of the first turn, 2x instead of 1.25x
    assert auto.share <= best + max(2.0, gamble) + 0.05, runs
    assert all(run.share >= auto.bound - 1e-9 for run in runs.values()), runs
    assert len({round(run.bound, 9) for run in runs.values()}) == 1  # the same bytes under every TTL


def test_on_steady_short_gaps_auto_pays_exactly_the_first_turns_snapshot_hour_over_fixed_5_minutes(
    tmp_path, clock
):
    runs = {ttl: _session(tmp_path, clock, ttl, [60.0] * 19) for ttl in ("5m", "auto")}
    assert runs["auto"].share - runs["5m"].share == pytest.approx(0.75 * runs["auto"].prefix, abs=0.01)
    assert runs["auto"].share - runs["5m"].share > 2.0  # this prompt: the 2 points cannot hold
