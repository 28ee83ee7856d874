"""Pacing the backfill to a requests-per-minute and a tokens-per-minute budget, and backing off on throttles.

Hand-written rather than pyrate-limiter (which the environment has): the backfill must pace itself against the
`Pacer` port (monotonic time + sleep), so tests and `bench/backfill.py` run on a simulated clock and are exact;
pyrate-limiter's buckets read their own clock and, since v3, leak items on a background thread, neither of which
can be driven by a fake clock. Two token buckets and a delay computation are 40 lines."""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from ..retry import full_jitter
from .ports import Pacer


@dataclass
class TokenBucket:
    """`rate` units per second, holding at most `capacity` (the burst). `take(n)` returns how long to wait
    before `n` units are available and reserves them (the level may go negative: the wait pays the debt)."""

    rate: float
    capacity: float
    level: float = field(default=0.0)
    updated: float | None = None

    def take(self, units: float, now: float) -> float:
        if self.updated is None:
            self.updated, self.level = now, self.capacity
        self.level = min(self.capacity, self.level + (now - self.updated) * self.rate)
        self.updated = now
        self.level -= units
        return 0.0 if self.level >= 0 else -self.level / self.rate


class RateLimiter:
    """Requests and tokens per minute, never more than the budget in any 60-second window (a provider that
    counts a sliding minute never throttles the backfill for its own pace). A bucket holding `capacity` and
    refilling at `rate` admits at most capacity + 60 x rate in a minute, so each bucket refills at the budget
    less its capacity: the request bucket holds one request (rpm - 1 a minute, 0.2 % below a 600 rpm budget);
    the token bucket holds one request's worth of tokens at the average size, so a large text waits for its
    tokens instead of overdrawing."""

    def __init__(self, rpm: int, tpm: int, pacer: Pacer) -> None:
        self._pacer = pacer
        self._requests = TokenBucket(rate=max(rpm - 1.0, 0.5) / 60.0, capacity=1.0)
        tokens_per_request = max(1.0, tpm / max(rpm, 1))
        self._tokens = TokenBucket(
            rate=max(tpm - tokens_per_request, tokens_per_request / 2) / 60.0, capacity=tokens_per_request
        )
        self.waited = 0.0

    def acquire(self, tokens: int) -> None:
        now = self._pacer.monotonic()
        wait = max(self._requests.take(1, now), self._tokens.take(tokens, now))
        if wait > 0:
            self.waited += wait
            self._pacer.sleep(wait)


def backoff(attempt: int, rng: random.Random, *, base: float = 0.5, cap: float = 30.0) -> float:
    """Full-jitter exponential backoff (AWS Architecture Blog, "Exponential Backoff And Jitter"): a delay drawn
    uniformly from [0, min(cap, base * 2^attempt)], so throttled workers do not retry in lockstep."""
    return full_jitter(attempt, base, cap, rng.random)


def estimate_tokens(text: str) -> int:
    """Tokens the provider will count for `text`: about four characters per token (English; an estimate, the
    budget has headroom for it)."""
    return max(1, (len(text) + 3) // 4)
