"""The provider's prompt cache (Bedrock / Anthropic Claude) as configuration: per-model cache rules and
prices, and a token monitor for the cache-stable prefix.

What the configuration encodes (DESIGN §3; every number is configuration):

- A cache point caches the whole prefix before it (tools, then system, then messages). A later request reads
  the cache only if its prefix up to a cache point is **byte-identical** to a cached one.
- A prefix shorter than the model's minimum cacheable length is not cached at all (1,024 tokens for the
  Sonnet/Opus 4 class, 2,048 for Haiku 3.x, 4,096 for Haiku 4.5 and Opus 4.5+ at the time of writing).
- An entry lives for its TTL (5 minutes by default, 1 hour where supported) and each hit refreshes it.
- Prices, relative to the model's input price: cache read 0.1×, 5-minute cache write 1.25×, 1-hour write 2×.

`PromptCacheConfig.cost` prices one real Bedrock usage record; `PrefixMonitor` counts the snapshot and the
cached prefix and warns when nothing would be cached or the snapshot is above its ceiling. A simulator that
applies these rules to a sequence of requests, for the cost benchmark and the tests, lives in
`bench/prompt_cache_simulator.py`.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import DomainError
from .config import ModelProfile
from .ports import TokenCounter

# --------------------------------------------------------------------------- cost


# --------------------------------------------------------------------------- token estimation

# CJK ideographs, kana, Hangul and full-width forms: about one token per character on Claude tokenizers.
_WIDE_RE = re.compile(
    "[\u1100-\u11ff\u2e80-\u2fdf\u3000-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef\U00020000-\U0002fa1f]"
)
_MESSAGE_OVERHEAD = 3
_CHARS_PER_TOKEN = 4


def estimate_text_tokens(text: str) -> int:
    """Rough tokens of `text`: one per CJK/Hangul/full-width character, one per 4 other characters (the
    usual rule of thumb for English on BPE tokenizers). An estimate for monitoring and trimming only: it can
    be off by 20 % or more; Bedrock CountTokens is exact."""
    wide = len(_WIDE_RE.findall(text))
    return wide + math.ceil((len(text) - wide) / _CHARS_PER_TOKEN)


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True)


def _block_tokens(block: Mapping[str, Any]) -> int:
    if "cachePoint" in block:
        return 0
    if isinstance(block.get("text"), str) and len(block) == 1:
        return estimate_text_tokens(block["text"])
    return estimate_text_tokens(_compact(block))


class CharTokenEstimator:
    """`TokenCounter` for the local runtime (no model to ask): `estimate_text_tokens` over the text of every
    block (structured blocks and tool definitions as their compact JSON) plus 3 tokens per message."""

    def count(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        system: Sequence[Mapping[str, Any]] | None = None,
        tool_config: Mapping[str, Any] | None = None,
    ) -> int:
        tokens = sum(_block_tokens(block) for block in system or ())
        if tool_config:
            tokens += estimate_text_tokens(_compact(tool_config.get("tools", [])))
        for message in messages:
            tokens += _MESSAGE_OVERHEAD + sum(_block_tokens(block) for block in message.get("content", ()))
        return tokens


# --------------------------------------------------------------------------- token monitor


@dataclass(frozen=True)
class TokenReport:
    """Tokens of a session's cache-stable prefix. Character caps stay the hard limit; tokens only warn."""

    model_id: str
    method: str
    """`count_tokens` (exact, from the model provider) or `estimate` (CharTokenEstimator)."""
    snapshot_tokens: int
    prefix_tokens: int
    """Tools + base system + snapshot: everything before the cache point."""
    min_cacheable_tokens: int
    ceiling_tokens: int
    warnings: tuple[str, ...] = field(default_factory=tuple)

    @property
    def cacheable(self) -> bool:
        return self.prefix_tokens >= self.min_cacheable_tokens

    @property
    def above_ceiling(self) -> bool:
        return self.snapshot_tokens > self.ceiling_tokens

    def as_dict(self) -> dict[str, Any]:
        return {
            "model_id": self.model_id,
            "method": self.method,
            "snapshot_tokens": self.snapshot_tokens,
            "prefix_tokens": self.prefix_tokens,
            "min_cacheable_tokens": self.min_cacheable_tokens,
            "ceiling_tokens": self.ceiling_tokens,
            "cacheable": self.cacheable,
            "above_ceiling": self.above_ceiling,
            "warnings": list(self.warnings),
        }


_PROBE = ({"role": "user", "content": [{"text": "."}]},)
"""CountTokens needs at least one message; its own tokens are measured once and subtracted."""


class PrefixMonitor:
    """Counts a session's snapshot and cached prefix for one model and explains what it means for caching."""

    def __init__(
        self,
        counter: TokenCounter,
        *,
        model_id: str,
        profile: ModelProfile,
        tool_config: Mapping[str, Any] | None,
        ceiling_tokens: int,
        exact: bool,
        fallback: TokenCounter | None = None,
    ) -> None:
        """`exact`: whether `counter` is the provider's own count (CountTokens) rather than an estimate."""
        self._counter = counter
        self._fallback = fallback or CharTokenEstimator()
        self.model_id = model_id
        self.profile = profile
        self._tool_config = dict(tool_config) if tool_config else None
        self.ceiling_tokens = ceiling_tokens
        self._exact = exact

    def assess(self, system: Sequence[Mapping[str, Any]], snapshot: str) -> TokenReport:
        warnings: list[str] = []
        method = "count_tokens" if self._exact else "estimate"
        try:
            snapshot_tokens, prefix_tokens = self._measure(self._counter, system, snapshot)
        except DomainError as error:
            # CountTokens is not offered for every model or region; an estimate still catches gross problems.
            method = "estimate"
            warnings.append(f"exact token count unavailable ({error.message}); figures are estimates")
            snapshot_tokens, prefix_tokens = self._measure(self._fallback, system, snapshot)
        minimum = self.profile.min_cacheable_tokens
        if prefix_tokens < minimum:
            warnings.append(
                f"the cache-stable prefix (tools, base system prompt and memory snapshot) is {prefix_tokens:,} "
                f"tokens, below the {minimum:,}-token minimum of {self.model_id}: nothing will be cached and every "
                "turn pays the full input price"
            )
        wants_hour = any(block.get("cachePoint", {}).get("ttl") == "1h" for block in system)
        if wants_hour and not self.profile.supports_1h_ttl:
            warnings.append(
                f"{self.model_id} is not known to support a 1-hour cache TTL; Bedrock may refuse the request. "
                "Use the default 5m, or add the model to the prompt-cache profiles"
            )
        if snapshot_tokens > self.ceiling_tokens:
            warnings.append(
                f"the memory snapshot is {snapshot_tokens:,} tokens, above the configured ceiling of "
                f"{self.ceiling_tokens:,}: consolidate MEMORY.md/USER.md or prune skills"
            )
        return TokenReport(
            model_id=self.model_id,
            method=method,
            snapshot_tokens=snapshot_tokens,
            prefix_tokens=prefix_tokens,
            min_cacheable_tokens=minimum,
            ceiling_tokens=self.ceiling_tokens,
            warnings=tuple(warnings),
        )

    def _measure(
        self, counter: TokenCounter, system: Sequence[Mapping[str, Any]], snapshot: str
    ) -> tuple[int, int]:
        probe = counter.count(_PROBE)
        snapshot_tokens = counter.count(_PROBE, system=[{"text": snapshot}]) - probe
        prefix_tokens = counter.count(_PROBE, system=list(system), tool_config=self._tool_config) - probe
        return max(0, snapshot_tokens), max(0, prefix_tokens)
