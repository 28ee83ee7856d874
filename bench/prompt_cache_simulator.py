"""A simulator of the provider's prompt cache (Bedrock / Anthropic Claude): which tokens of each request of a
sequence would be read from the cache, written to it or sent uncached. Not a benchmark itself: the cost
benchmark (`prompt_cache.py`) and the tests' chat model double (`tests/contract/chat_fakes.py`) use it; the
service only needs the rules as configuration (`agent_memory.domain.sessions.prompt_cache`).

The rules applied (DESIGN §3):

- A cache point caches the whole prefix before it (tools, then system, then messages). A later request reads
  the cache only if its prefix up to a cache point is **byte-identical** to a cached one.
- A prefix shorter than the model's minimum cacheable length is not cached at all.
- An entry lives for its TTL (5 minutes by default, 1 hour where supported) and each hit refreshes it.
- At most 4 cache points per request.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from agent_memory.domain.errors import ValidationFailed
from agent_memory.domain.sessions.config import CacheTtl, ModelProfile
from agent_memory.domain.sessions.ports import Usage

TTL_SECONDS: dict[str, int] = {"5m": 300, "1h": 3600}
MAX_CACHE_POINTS = 4


@dataclass(frozen=True)
class CacheBlock:
    """One piece of a request in prefix order (tool definitions, a system block, a message), with its exact
    bytes, its token count and, when a cache point follows it, that cache point's TTL."""

    data: bytes
    tokens: int
    cache_point: CacheTtl | None = None


@dataclass(frozen=True)
class CacheOutcome:
    """How the provider would bill one request's input. Token positions are offsets in the prompt:
    [0, read_end) was read from the cache, [read_end, write_end) written to it, the rest sent uncached."""

    total_tokens: int
    read_end: int
    write_end: int
    written_ttls: tuple[tuple[int, int, CacheTtl], ...] = ()
    """(start, end, ttl) of each written span."""

    @property
    def read_tokens(self) -> int:
        return self.read_end

    @property
    def write_tokens(self) -> int:
        return self.write_end - self.read_end

    @property
    def uncached_tokens(self) -> int:
        return self.total_tokens - self.write_end

    def usage(self, output_tokens: int = 0) -> Usage:
        return Usage(self.uncached_tokens, output_tokens, self.read_tokens, self.write_tokens)

    def split(self, start: int, end: int) -> tuple[int, int, int]:
        """Tokens of the span [start, end) that were (read, written, uncached)."""
        read = _overlap(start, end, 0, self.read_end)
        written = _overlap(start, end, self.read_end, self.write_end)
        return read, written, (end - start) - read - written

    def span_cost_units(self, start: int, end: int, profile: ModelProfile) -> float:
        """Cost of the span in units of "one token at the base input price"."""
        read = _overlap(start, end, 0, self.read_end)
        written = 0.0
        written_tokens = 0
        for span_start, span_end, ttl in self.written_ttls:
            tokens = _overlap(start, end, span_start, span_end)
            written_tokens += tokens
            written += tokens * profile.write_multiplier(ttl)
        uncached = (end - start) - read - written_tokens
        return read * profile.cache_read_multiplier + written + uncached


def _overlap(a_start: int, a_end: int, b_start: int, b_end: int) -> int:
    return max(0, min(a_end, b_end) - max(a_start, b_start))


class PromptCacheSimulator:
    """Applies the cache rules to a sequence of requests against one cache (one account, region and model)."""

    def __init__(self, min_cacheable_tokens: int, *, max_cache_points: int = MAX_CACHE_POINTS) -> None:
        self.min_cacheable_tokens = min_cacheable_tokens
        self.max_cache_points = max_cache_points
        self._entries: dict[str, tuple[datetime, CacheTtl]] = {}

    def send(self, blocks: Sequence[CacheBlock], at: datetime) -> CacheOutcome:
        points: list[tuple[int, str, CacheTtl]] = []  # (prefix tokens, prefix digest, ttl) per cache point
        digest = hashlib.sha256()
        total = 0
        for block in blocks:
            digest.update(len(block.data).to_bytes(8, "big"))  # length-prefixed: block boundaries count
            digest.update(block.data)
            total += block.tokens
            if block.cache_point is not None:
                points.append((total, digest.copy().hexdigest(), block.cache_point))
        if len(points) > self.max_cache_points:
            raise ValidationFailed(
                f"a request may carry at most {self.max_cache_points} cache points; this one has {len(points)}"
            )

        # The longest cached prefix wins; a hit refreshes the entry's lifetime.
        read_end = 0
        for tokens, key, _ in points:
            entry = self._entries.get(key)
            if entry is not None and at < entry[0]:
                read_end = max(read_end, tokens)
                self._entries[key] = (at + timedelta(seconds=TTL_SECONDS[entry[1]]), entry[1])

        write_end = read_end
        written: list[tuple[int, int, CacheTtl]] = []
        for tokens, key, ttl in points:
            if tokens <= read_end or tokens < self.min_cacheable_tokens:
                continue
            self._entries[key] = (at + timedelta(seconds=TTL_SECONDS[ttl]), ttl)
            written.append((write_end, tokens, ttl))
            write_end = tokens
        return CacheOutcome(
            total_tokens=total, read_end=read_end, write_end=write_end, written_ttls=tuple(written)
        )
