"""Configuration of the sessions wing: the chat model, the context budget, sessions, and the prompt-cache
model table with its prices.

Kept apart from the services so that what every runtime loads at start-up (`settings.service.Settings` holds
these) does not import the chat and session services: the API function's cold start pays for the services
only when a session route is called (bench/cold_start.py).
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import ConfigDict, Field, model_validator

from ..model import Model

if TYPE_CHECKING:
    from .ports import Usage

CacheTtl = Literal["5m", "1h"]
"""Prompt-cache time to live of a cache point: Bedrock's `CachePointBlock.ttl` values."""
CacheTtlMode = Literal["5m", "1h", "auto"]
"""A session's TTL setting: one fixed TTL for every cache point, or `auto`: chosen per cache point and turn
from the session's rhythm (`cache_ttl.choose_ttls`)."""

PER_MILLION = 1_000_000

# --------------------------------------------------------------------------- chat

DEFAULT_CHAT_MODEL_ID = "anthropic.claude-sonnet-4-5-20250929-v1:0"

Share = Annotated[float, Field(ge=0.0, le=1.0)]

# --------------------------------------------------------------------------- configuration


class ContextBudget(Model):
    """Shares of the model's context window (seed design: 5 / 25 / 15 / 35 / 20 %)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    system: Share = 0.05
    memory: Share = 0.25
    tools: Share = 0.15
    history: Share = 0.35
    response: Share = 0.20

    @model_validator(mode="after")
    def _at_most_whole(self) -> ContextBudget:
        total = self.system + self.memory + self.tools + self.history + self.response
        if total > 1.0 + 1e-9:
            raise ValueError(f"context budget shares add up to {total:.2f}; they may not exceed 1.0")
        if self.history <= 0 or self.response <= 0:
            raise ValueError("the history and response shares must be positive")
        return self

    def tokens(self, window: int) -> dict[str, int]:
        return {
            "system": int(window * self.system),
            "memory": int(window * self.memory),
            "tools": int(window * self.tools),
            "history": int(window * self.history),
            "response": int(window * self.response),
        }


class ChatConfig(Model):
    model_config = ConfigDict(extra="forbid", frozen=True)

    model_id: Annotated[str, Field(min_length=1, max_length=2048)] = DEFAULT_CHAT_MODEL_ID
    """Bedrock model or inference-profile id (or ARN). Also selects the prompt-cache profile and prices."""
    count_tokens_model_id: str | None = None
    """CountTokens takes a foundation-model id; default: `model_id` without a geographic profile prefix."""
    max_tool_rounds: Annotated[int, Field(ge=0, le=20)] = 5
    """Model calls that may ask for tools in one turn; the turn ends after at most this many + 1 calls."""
    max_output_tokens: Annotated[int, Field(ge=1, le=128_000)] = 2048
    temperature: Annotated[float, Field(ge=0.0, le=1.0)] | None = None
    budget: ContextBudget = ContextBudget()
    context_window: Annotated[int, Field(ge=1000)] | None = None
    """Default: the model profile's window."""
    summarize_history: bool = False
    """Summarise elided turns with the model (one extra call when trimming happens); else a marked elision."""
    summary_max_tokens: Annotated[int, Field(ge=16, le=8192)] = 512
    elision_step: Share = 0.25
    """History trimming moves in steps of this share of the history budget (`chat.plan_history`), so the
    cached history prefix survives the turns between steps; 0 trims one turn at a time."""
    history_cache_points: bool = True
    """Cache points on the conversation history (the previous request's end and this request's end), so
    each call writes only its new messages and reads the rest; off: only the system cache point."""
    cache_ttl_horizon_turns: Annotated[int, Field(ge=1, le=1000)] = 32
    """`auto` cache TTLs: how many more turns a TTL choice is expected to serve at least (`cache_ttl.py`)."""
    snapshot_ceiling_tokens: Annotated[int, Field(ge=1)] | None = None
    """Alert above this many snapshot tokens. Default: the budget's memory share of the window."""
    max_message_chars: Annotated[int, Field(ge=1, le=1_000_000)] = 20_000
    recall_k: Annotated[int, Field(ge=1, le=50)] = 5
    tool_result_max_chars: Annotated[int, Field(ge=200, le=100_000)] = 8_000

    def foundation_model_id(self) -> str:
        if self.count_tokens_model_id:
            return self.count_tokens_model_id
        prefix, dot, rest = self.model_id.partition(".")
        # Cross-region inference profiles are `<geo>.<provider>.<model>`: us., eu., apac., global., …
        return (
            rest if dot and rest.count(".") >= 1 and prefix.isalpha() and len(prefix) <= 6 else self.model_id
        )


NO_MODEL_MESSAGE = (
    "no chat model is configured in this runtime: set AGENT_MEMORY_CHAT_PROVIDER=bedrock (with AWS credentials "
    "allowed bedrock:InvokeModel on the model in AGENT_MEMORY_CHAT) to chat here, or send the `system` blocks "
    "from POST /v1/sessions to your own model"
)


# --------------------------------------------------------------------------- sessions

DEFAULT_BASE_SYSTEM = (
    "You are a helpful assistant with a persistent memory. Below is a snapshot of your memory files for this "
    "project, frozen when this session started. Use the memory tools to keep durable facts: add, replace or "
    "remove entries in MEMORY.md (your notes) and USER.md (what you know about the user), remember facts as "
    "records, and recall records. What you write is saved at once but appears in the snapshot only in the "
    "next session."
)

MAX_BASE_SYSTEM_CHARS = 20_000
"""The longest `base_system` a caller may send: the API's OpenAPI limit and the default (and ceiling) of
`SessionConfig.max_base_system_chars`, so the document and the service agree."""


class SessionConfig(Model):
    model_config = ConfigDict(extra="forbid", frozen=True)

    ttl_hours: Annotated[float, Field(gt=0, le=24 * 30)] = 24.0
    """After this long a session refuses turns and the store may delete it (DynamoDB TTL)."""
    default_cache_ttl: CacheTtlMode = "auto"
    """`auto` starts every cache point with the model's default (5 minutes) and moves the snapshot and
    history cache points to 1 hour when the session's gaps make that cheaper, and back (`cache_ttl.py`)."""
    allowed_cache_ttls: tuple[CacheTtlMode, ...] = ("5m", "1h", "auto")
    default_base_system: Annotated[str, Field(min_length=1)] = DEFAULT_BASE_SYSTEM
    max_base_system_chars: Annotated[int, Field(ge=100, le=MAX_BASE_SYSTEM_CHARS)] = MAX_BASE_SYSTEM_CHARS
    max_open_sessions: Annotated[int, Field(ge=1, le=100_000)] = 100
    """Open (not ended, unexpired) sessions per tenant; a start beyond it is refused with 409."""
    max_open_sessions_per_key: Annotated[int, Field(ge=1, le=100_000)] = 20
    """Open sessions per API key (the session's actor), so that one key (say one limited to /projects/alpha)
    cannot use up the whole tenant's cap and lock every other key out; a start beyond it is refused with 409."""
    max_open_sessions_per_namespace: Annotated[int, Field(ge=1, le=100_000)] = 50
    """Open sessions per namespace (of any key), so that the keys of one busy namespace cannot use up the
    tenant's cap for the others; a start beyond it is refused with 409."""
    max_skills_listed: Annotated[int, Field(ge=0, le=1000)] = 50
    max_skill_description_chars: Annotated[int, Field(ge=0, le=2000)] = 200
    max_skills_index_chars: Annotated[int, Field(ge=0, le=100_000)] = 6000
    """Character budget of the snapshot's skills listing (names + descriptions); the rest is counted."""

    @model_validator(mode="after")
    def _default_allowed(self) -> SessionConfig:
        if self.default_cache_ttl not in self.allowed_cache_ttls:
            raise ValueError(f"default_cache_ttl {self.default_cache_ttl!r} is not in allowed_cache_ttls")
        return self


# --------------------------------------------------------------------------- prompt cache

Multiplier = Annotated[float, Field(ge=0.0, le=10.0)]


class ModelProfile(Model):
    """Cache rules and list prices of the models whose id matches `pattern` (fnmatch, case-insensitive;
    Bedrock ids such as `us.anthropic.claude-sonnet-4-5-20250929-v1:0`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    pattern: str
    min_cacheable_tokens: Annotated[int, Field(ge=0, le=1_000_000)]
    context_window: Annotated[int, Field(ge=1000, le=10_000_000)] = 200_000
    input_usd_per_mtok: Annotated[float, Field(ge=0)]
    output_usd_per_mtok: Annotated[float, Field(ge=0)]
    supports_1h_ttl: bool = False
    cache_read_multiplier: Multiplier = 0.1
    cache_write_5m_multiplier: Multiplier = 1.25
    cache_write_1h_multiplier: Multiplier = 2.0

    def write_multiplier(self, ttl: CacheTtl) -> float:
        return self.cache_write_1h_multiplier if ttl == "1h" else self.cache_write_5m_multiplier


# Public list prices (USD per million tokens) and documented minimums at the time of writing. Regional and
# cross-region inference profiles may be priced differently: override the table in configuration.
DEFAULT_PROFILES: tuple[ModelProfile, ...] = (
    ModelProfile(
        pattern="*claude-opus-4-6*",
        min_cacheable_tokens=4096,
        input_usd_per_mtok=5.0,
        output_usd_per_mtok=25.0,
        supports_1h_ttl=True,
    ),
    ModelProfile(
        pattern="*claude-opus-4-5*",
        min_cacheable_tokens=4096,
        input_usd_per_mtok=5.0,
        output_usd_per_mtok=25.0,
        supports_1h_ttl=True,
    ),
    ModelProfile(
        pattern="*claude-opus-4-*",
        min_cacheable_tokens=1024,
        input_usd_per_mtok=15.0,
        output_usd_per_mtok=75.0,
    ),
    ModelProfile(
        pattern="*claude-sonnet-4-5*",
        min_cacheable_tokens=1024,
        input_usd_per_mtok=3.0,
        output_usd_per_mtok=15.0,
        supports_1h_ttl=True,
    ),
    ModelProfile(
        pattern="*claude-sonnet-4-6*",
        min_cacheable_tokens=1024,
        input_usd_per_mtok=3.0,
        output_usd_per_mtok=15.0,
        supports_1h_ttl=True,
    ),
    ModelProfile(
        pattern="*claude-sonnet-4*",
        min_cacheable_tokens=1024,
        input_usd_per_mtok=3.0,
        output_usd_per_mtok=15.0,
    ),
    ModelProfile(
        pattern="*claude-3-7-sonnet*",
        min_cacheable_tokens=1024,
        input_usd_per_mtok=3.0,
        output_usd_per_mtok=15.0,
    ),
    ModelProfile(
        pattern="*claude-haiku-4-5*",
        min_cacheable_tokens=4096,
        input_usd_per_mtok=1.0,
        output_usd_per_mtok=5.0,
        supports_1h_ttl=True,
    ),
    ModelProfile(
        pattern="*claude-3-5-haiku*",
        min_cacheable_tokens=2048,
        input_usd_per_mtok=0.8,
        output_usd_per_mtok=4.0,
    ),
    ModelProfile(
        pattern="*claude-3-haiku*",
        min_cacheable_tokens=2048,
        input_usd_per_mtok=0.25,
        output_usd_per_mtok=1.25,
    ),
)
FALLBACK_PROFILE = ModelProfile(
    pattern="*", min_cacheable_tokens=1024, input_usd_per_mtok=3.0, output_usd_per_mtok=15.0
)
"""Unknown models are priced and checked like the Sonnet class; configure a profile for yours."""


class PromptCacheConfig(Model):
    """The model table: the first profile whose pattern matches the model id wins."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    profiles: tuple[ModelProfile, ...] = DEFAULT_PROFILES
    fallback: ModelProfile = FALLBACK_PROFILE

    def profile(self, model_id: str) -> ModelProfile:
        lowered = model_id.lower()
        for profile in self.profiles:
            if fnmatch.fnmatchcase(lowered, profile.pattern.lower()):
                return profile
        return self.fallback

    def cost(self, model_id: str, usage: Usage, ttl: CacheTtl = "5m") -> TurnCost:
        """Price one usage record. Cache writes are priced at the TTL of the session's cache point."""
        return price(self.profile(model_id), usage, ttl)


@dataclass(frozen=True)
class TurnCost:
    input_usd: float
    cache_read_usd: float
    cache_write_usd: float
    output_usd: float
    usd_without_cache: float
    """What the same tokens would cost with no caching: every input token at the base input price."""

    @property
    def usd(self) -> float:
        return self.input_usd + self.cache_read_usd + self.cache_write_usd + self.output_usd

    def as_dict(self) -> dict[str, float]:
        return {
            "usd": round(self.usd, 8),
            "input_usd": round(self.input_usd, 8),
            "cache_read_usd": round(self.cache_read_usd, 8),
            "cache_write_usd": round(self.cache_write_usd, 8),
            "output_usd": round(self.output_usd, 8),
            "usd_without_cache": round(self.usd_without_cache, 8),
        }


def price(profile: ModelProfile, usage: Usage, ttl: CacheTtl = "5m") -> TurnCost:
    """The cost of one usage record. Cache writes are priced by TTL where the usage says which were 1-hour
    writes (`Usage.write_ttls_known`), else all at `ttl`."""
    unit = profile.input_usd_per_mtok / PER_MILLION
    if usage.write_ttls_known:
        hour = min(usage.cache_write_1h_input_tokens, usage.cache_write_input_tokens)
        write_units = (
            hour * profile.cache_write_1h_multiplier
            + (usage.cache_write_input_tokens - hour) * profile.cache_write_5m_multiplier
        )
    else:
        write_units = usage.cache_write_input_tokens * profile.write_multiplier(ttl)
    return TurnCost(
        input_usd=usage.input_tokens * unit,
        cache_read_usd=usage.cache_read_input_tokens * unit * profile.cache_read_multiplier,
        cache_write_usd=write_units * unit,
        output_usd=usage.output_tokens * profile.output_usd_per_mtok / PER_MILLION,
        usd_without_cache=usage.total_input_tokens * unit
        + usage.output_tokens * profile.output_usd_per_mtok / PER_MILLION,
    )
