"""The one way this service retries: exponential backoff with FULL jitter, bounded by a number of attempts AND a
deadline (a time budget for all attempts and pauses), ending in one clear domain error.

A pause after failed attempt `n` (0-based) is drawn uniformly from [0, min(max_delay, base_delay * 2^n)]
("Exponential Backoff And Jitter", AWS Architecture Blog), so competing writers do not retry in lockstep. No
pause is taken after the last attempt, nor one that would end past the deadline: the caller gets its error at
once instead of sleeping for nothing.

What the final error is depends on why the call failed, and each call site says it (`give_up`):
- a dependency that stayed throttled or unavailable (DynamoDB unprocessed items, Bedrock throttling):
  `UpstreamUnavailable`, which the API answers 503 with `Retry-After`; a batch names what it did not write or
  read (never a silent partial result);
- another writer that kept winning an optimistic-concurrency race: the last `ConcurrentModification` (409),
  re-raised as it is (its message already says what changed and to read again).

Throttling inside one AWS call (the SDK's own resend of a throttled request) is botocore's job (`standard` or
`adaptive` retry mode in each client's `Config`); this module covers what the SDK does not retry: items a batch
call left unprocessed, a model whose retries we own (Bedrock clients run with SDK retries off so attempts do
not multiply), and the read-modify-write races of the domain. `sleep`, `clock` and `rand` are injectable so
tests neither wait nor depend on chance."""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import TypeVar

from .errors import ConcurrentModification

T = TypeVar("T")

RetryOn = tuple[type[Exception], ...] | Callable[[Exception], bool]


def full_jitter(attempt: int, base: float, cap: float, rand: Callable[[], float]) -> float:
    """A pause drawn uniformly from [0, min(cap, base * 2^attempt)] (`rand()` is uniform in [0, 1))."""
    return rand() * min(cap, base * 2**attempt)


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how long to try: `max_attempts` calls at most, pauses in [0, min(max_delay, base_delay *
    2^n)], and no pause that would end more than `deadline` seconds after the first call started."""

    max_attempts: int
    base_delay: float
    max_delay: float
    deadline: float

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        if self.base_delay < 0 or self.max_delay < self.base_delay:
            raise ValueError("delays must satisfy 0 <= base_delay <= max_delay")
        if self.deadline <= 0:
            raise ValueError("deadline must be positive (seconds)")

    @property
    def retry_after(self) -> int:
        """Whole seconds a client should wait before sending the failed request again (at least 1)."""
        return max(1, round(self.max_delay))


DYNAMODB_BATCH = RetryPolicy(max_attempts=8, base_delay=0.05, max_delay=2.0, deadline=10.0)
"""Items a DynamoDB batch call left unprocessed (the table is throttling): up to ~5 s of pauses."""

BEDROCK = RetryPolicy(max_attempts=6, base_delay=0.25, max_delay=8.0, deadline=20.0)
"""A throttled or not-yet-ready Bedrock model (SDK retries off): under API Gateway's 29-second limit."""

CONCURRENT_WRITE = RetryPolicy(max_attempts=3, base_delay=0.01, max_delay=0.2, deadline=5.0)
"""A guarded write that lost to another writer: read again and try again, briefly."""


@dataclass(frozen=True)
class Exhausted:
    """Why the retries ended: the attempts made, the seconds spent, and the last error (None when the last
    attempt returned a result that still asked for another try, e.g. unprocessed items)."""

    attempts: int
    elapsed: float
    last_error: Exception | None


class Attempts:
    """One run of a `Retry` (see `Retry.attempts`)."""

    def __init__(self, retry: Retry) -> None:
        self._retry = retry
        self.exhausted: Exhausted | None = None
        """Set when the run ran out of attempts or time (None while running, or when the caller broke out)."""

    def __iter__(self) -> Iterator[int]:
        return self._retry._run(self)


class Retry:
    """A `RetryPolicy` with its sleep, clock and random source (real ones unless a test injects its own)."""

    def __init__(
        self,
        policy: RetryPolicy,
        *,
        sleep: Callable[[float], None] | None = None,
        clock: Callable[[], float] | None = None,
        rand: Callable[[], float] | None = None,
    ) -> None:
        self.policy = policy
        self._sleep = sleep or time.sleep
        self._clock = clock or time.monotonic
        self._rand = rand or random.random

    def delay(self, attempt: int) -> float:
        """The pause after failed attempt `attempt` (0-based): full jitter."""
        return full_jitter(attempt, self.policy.base_delay, self.policy.max_delay, self._rand)

    def attempts(self) -> Attempts:
        """One run of the policy, to iterate: attempt numbers 0, 1, ..., pausing before each but the first;
        the loop body breaks (or returns) when an attempt succeeded. The run ends after `max_attempts`, or
        before a pause that would pass the deadline, and then holds `exhausted` for the caller's one final
        error. Each call is a new run, so one `Retry` serves concurrent threads."""
        return Attempts(self)

    def _run(self, attempts: Attempts) -> Iterator[int]:
        started = self._clock()
        attempt = 0
        while True:
            yield attempt
            attempt += 1
            elapsed = self._clock() - started
            if attempt >= self.policy.max_attempts:
                break
            pause = self.delay(attempt - 1)
            if elapsed + pause > self.policy.deadline:
                break
            self._sleep(pause)
        attempts.exhausted = Exhausted(attempt, self._clock() - started, None)

    def call(
        self,
        fn: Callable[[], T],
        *,
        retry_on: RetryOn,
        give_up: Callable[[Exhausted], Exception] | None = None,
    ) -> T:
        """`fn()`, again while it raises an error `retry_on` accepts. Any other error propagates at once. When
        the attempts or the deadline run out, raises `give_up(exhausted)` (chained to the last error), or the
        last error itself when `give_up` is None."""
        accepts = _is_instance(retry_on) if isinstance(retry_on, tuple) else retry_on
        last: Exception | None = None
        run = self.attempts()
        for _ in run:
            try:
                return fn()
            except Exception as error:
                if not accepts(error):
                    raise
                last = error
        assert last is not None and run.exhausted is not None
        if give_up is None:
            raise last
        raise give_up(Exhausted(run.exhausted.attempts, run.exhausted.elapsed, last)) from last


def _is_instance(types: tuple[type[Exception], ...]) -> Callable[[Exception], bool]:
    return lambda error: isinstance(error, types)


def on_conflict(
    fn: Callable[[], T],
    *,
    attempts: int = CONCURRENT_WRITE.max_attempts,
    give_up: Callable[[Exhausted], Exception] | None = None,
) -> T:
    """`fn()` (a read-modify-write guarded by the version it read), again after a short full-jitter pause
    while it raises `ConcurrentModification`; the last one (409) when `attempts` or the deadline ran out
    (or `give_up`'s error, e.g. a `Conflict` that says who won)."""
    policy = replace(CONCURRENT_WRITE, max_attempts=attempts)
    return Retry(policy).call(fn, retry_on=(ConcurrentModification,), give_up=give_up)
