"""A simulator of the provider's prompt cache (Bedrock / Anthropic Claude): which tokens of each request of a
sequence would be read from the cache, written to it or sent uncached. Not a benchmark itself: the cost
benchmark (`prompt_cache.py`) and the tests' chat model double (`tests/contract/chat_fakes.py`) use it; the
service only needs the rules as configuration (`agent_memory.domain.sessions.prompt_cache`).

The rules applied (DESIGN §3):

- A cache point caches the whole prefix before it (tools, then system, then messages). A later request reads
  the cache only if its prefix up to a cache point is **byte-identical** to a cached one.
- A prefix shorter than the model's minimum cacheable length is not cached at all.
- An entry lives for its TTL (5 minutes by default, 1 hour where supported) and each hit refreshes it.
- At most 4 cache points per request (tools, system and messages together).
- Entries are written only at cache points; a cache point reads the longest cached prefix that ends at a
  block boundary at most `LOOKBACK_BLOCKS` (20) content blocks before it: the provider's documented lookback.
  An entry further back is not found, even though its bytes match.
- The cache point itself is not part of the cached bytes: moving a cache point (or removing an earlier one)
  does not change the prefix. Converse sends `{"cachePoint": {...}}` as a block after the cached one
  (`converse_blocks` turns a request into simulator blocks that way).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from agent_memory.domain.errors import ValidationFailed
from agent_memory.domain.sessions.config import CacheTtl, ModelProfile
from agent_memory.domain.sessions.ports import Usage
from agent_memory.domain.sessions.prompt_cache import estimate_text_tokens

TTL_SECONDS: dict[str, int] = {"5m": 300, "1h": 3600}
MAX_CACHE_POINTS = 4
LOOKBACK_BLOCKS = 20
"""How many block boundaries before a cache point the provider checks for a cached prefix."""
MESSAGE_OVERHEAD_TOKENS = 3


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
        """Bedrock's usage record, with the writes split by TTL as its `cacheDetails` reports them."""
        hour = sum(end - start for start, end, ttl in self.written_ttls if ttl == "1h")
        return Usage(
            self.uncached_tokens,
            output_tokens,
            self.read_tokens,
            self.write_tokens,
            cache_write_1h_input_tokens=hour,
            write_ttls_known=True,
        )

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

    def __init__(
        self,
        min_cacheable_tokens: int,
        *,
        max_cache_points: int = MAX_CACHE_POINTS,
        lookback_blocks: int = LOOKBACK_BLOCKS,
    ) -> None:
        self.min_cacheable_tokens = min_cacheable_tokens
        self.max_cache_points = max_cache_points
        self.lookback_blocks = lookback_blocks
        self._entries: dict[str, tuple[datetime, CacheTtl]] = {}

    def send(self, blocks: Sequence[CacheBlock], at: datetime) -> CacheOutcome:
        # (prefix tokens, prefix digest) at every block boundary; the cache points by block position
        boundaries: list[tuple[int, str]] = []
        points: list[tuple[int, CacheTtl]] = []
        digest = hashlib.sha256()
        total = 0
        for position, block in enumerate(blocks):
            digest.update(len(block.data).to_bytes(8, "big"))  # length-prefixed: block boundaries count
            digest.update(block.data)
            total += block.tokens
            boundaries.append((total, digest.copy().hexdigest()))
            if block.cache_point is not None:
                points.append((position, block.cache_point))
        if len(points) > self.max_cache_points:
            raise ValidationFailed(
                f"a request may carry at most {self.max_cache_points} cache points; this one has {len(points)}"
            )

        # Each cache point looks back up to `lookback_blocks` boundaries; the longest cached prefix wins and
        # a hit refreshes the entry's lifetime.
        read_end = 0
        hit: str | None = None
        for position, _ in points:
            for back in range(position, max(-1, position - self.lookback_blocks - 1), -1):
                tokens, key = boundaries[back]
                entry = self._entries.get(key)
                if entry is not None and at < entry[0]:
                    if tokens > read_end:
                        read_end, hit = tokens, key
                    break
        if hit is not None:
            ttl = self._entries[hit][1]
            self._entries[hit] = (at + timedelta(seconds=TTL_SECONDS[ttl]), ttl)

        write_end = read_end
        written: list[tuple[int, int, CacheTtl]] = []
        for position, ttl in points:
            tokens, key = boundaries[position]
            if tokens <= read_end or tokens < self.min_cacheable_tokens:
                continue
            self._entries[key] = (at + timedelta(seconds=TTL_SECONDS[ttl]), ttl)
            written.append((write_end, tokens, ttl))
            write_end = tokens
        return CacheOutcome(
            total_tokens=total, read_end=read_end, write_end=write_end, written_ttls=tuple(written)
        )


# --------------------------------------------------------------------------- Converse requests


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True)


def converse_blocks(
    tool_config: Mapping[str, Any] | None,
    system: Sequence[Mapping[str, Any]],
    messages: Sequence[Mapping[str, Any]],
) -> list[CacheBlock]:
    """A Converse request in prefix order as simulator blocks: one per tool definition, system block and
    message content block (the first block of a message carries its role and the per-message overhead).
    A `cachePoint` block marks the block before it and adds no bytes of its own."""
    blocks: list[CacheBlock] = []

    def mark(point: Mapping[str, Any]) -> None:
        if not blocks:
            raise ValidationFailed("a cachePoint must follow content")
        last = blocks[-1]
        blocks[-1] = CacheBlock(last.data, last.tokens, point.get("ttl", "5m"))

    for tool in (tool_config or {}).get("tools", []):
        if "cachePoint" in tool:
            mark(tool["cachePoint"])
            continue
        data = _compact(tool)
        blocks.append(CacheBlock(data.encode(), estimate_text_tokens(data)))
    for block in system:
        if "cachePoint" in block:
            mark(block["cachePoint"])
            continue
        text = block["text"] if "text" in block and len(block) == 1 else _compact(block)
        blocks.append(CacheBlock(text.encode(), estimate_text_tokens(text)))
    for message in messages:
        first = True
        for block in message.get("content", ()):
            if "cachePoint" in block:
                mark(block["cachePoint"])
                continue
            text = block["text"] if "text" in block and len(block) == 1 else _compact(block)
            data = (f"{message['role']}:" if first else "") + text
            tokens = estimate_text_tokens(text) + (MESSAGE_OVERHEAD_TOKENS if first else 0)
            blocks.append(CacheBlock(data.encode(), tokens))
            first = False
    return blocks
