"""Settings of the local job runner and of the local server's per-key rate limit (AGENT_MEMORY_JOBS and
AGENT_MEMORY_RATE_LIMIT, JSON)."""

from __future__ import annotations

from typing import Annotated

from pydantic import ConfigDict, Field

from ..model import Model


class JobConfig(Model):
    model_config = ConfigDict(extra="forbid", frozen=True)

    workers: Annotated[int, Field(ge=1, le=16)] = 1
    """Job worker processes (the local server runs jobs outside its request process). One leaves the other
    core to the requests; jobs wait their turn, tenants in turn."""
    worker_niceness: Annotated[int, Field(ge=0, le=19)] = 10
    """How much lower than the server's the workers' CPU priority is (`os.nice`): requests win the cores."""
    batch_threshold: Annotated[int, Field(ge=0, le=1000)] = 25
    """POST /v1/memories/batch with more items than this answers 202 and runs as a job; smaller batches are
    answered within the request (200), as before."""
    max_queued_per_tenant: Annotated[int, Field(ge=1, le=10_000)] = 64
    """Jobs of one tenant waiting to run; one more is refused with 429 `too_many_jobs` and Retry-After."""
    lost_after_seconds: Annotated[int, Field(ge=60, le=86_400)] | None = None
    """AWS: a job still queued or running this long after it was accepted ran nowhere any more (Lambda gave up
    on its event: every retry failed, or the event outlived its maximum age and went to the dead-letter
    queue). Reading it then fails it as `lost` instead of showing it `running` forever. The stack sets it to
    the job function's maximum event age plus one invocation's timeout and a margin; the local runtime sees
    a dead worker directly and leaves it unset."""


class RateLimitConfig(Model):
    model_config = ConfigDict(extra="forbid", frozen=True)

    requests_per_second: Annotated[float, Field(ge=0, le=100_000)] = 50.0
    """Sustained requests per API key (token bucket refill); 0 turns the limit off."""
    burst: Annotated[int, Field(ge=1, le=100_000)] = 100
    """Requests one key may send at once before the sustained rate applies (bucket size)."""
