"""Ports and value objects of sessions and chat: the session store, the chat model and the token counter.

Kept apart from `ports.py` (the memory core's contract) so the core does not grow with the chat capability.
Messages, system blocks and tool configurations are plain dicts in Bedrock Converse shape: that shape is the
contract a caller who brings its own model receives, and the one the Bedrock adapter sends unchanged.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from enum import StrEnum
from typing import Annotated, Any, Literal, Protocol

from pydantic import ConfigDict, Field, field_validator

from ..errors import Conflict
from ..model import Model
from ..records import NamespacePath, TenantId
from .config import CacheTtl, CacheTtlMode

EffectiveStatus = Literal["open", "ended", "expired"]
"""A session's status as callers see it (`SessionRecord.effective_status`)."""

Message = dict[str, Any]
"""A Converse message: `{"role": "user" | "assistant", "content": [content blocks]}`."""

SystemBlock = dict[str, Any]
"""A Converse system block: `{"text": ...}` or `{"cachePoint": {"type": "default"}}`."""

SESSION_ID_PATTERN = r"^ses_[0-9a-f]{32}$"
_SESSION_ID_RE = re.compile(SESSION_ID_PATTERN)


def new_session_id() -> str:
    return f"ses_{uuid.uuid4().hex}"


def is_valid_session_id(session_id: str) -> bool:
    return isinstance(session_id, str) and bool(_SESSION_ID_RE.match(session_id))


class SessionClosed(Conflict):
    """The session was ended or has expired (409): its snapshot is released; start a new session."""

    code = "session_closed"


class SessionPurged(SessionClosed):
    """Content of the session's snapshot was purged (domain/erasure): the snapshot is gone and the session
    cannot continue (409); start a new session."""

    code = "session_purged"


class TooManySessions(Conflict):
    """The tenant already has its maximum of open sessions (409): end some, or wait for them to expire."""

    code = "too_many_sessions"


class SessionStatus(StrEnum):
    OPEN = "open"
    ENDED = "ended"
    PURGED = "purged"
    """Its snapshot named purged content: snapshot and turns were erased (domain/erasure)."""


class SessionUsage(Model):
    """Token figures of a session accumulated over its turns (the token monitor): what the prompt cache
    wrote, read and what went uncached, the cost estimate, and how many turns found the cache broken (they
    read less than the previous turn had cached: the TTL ran out between turns, or history trimming changed
    the prefix). Added by `SessionStore.append_turn` in the same atomic write as the turn."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    turns: int = 0
    input_tokens: int = 0
    """Uncached input tokens (Bedrock's `inputTokens`)."""
    cache_read_input_tokens: int = 0
    cache_write_input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    cache_breaks: int = 0
    cost_without_cache_usd: float = 0.0
    """What the same turns would have cost with no prompt caching."""
    snapshot_1h_turns: int = 0
    """Turns whose snapshot (system) cache point used the 1-hour TTL; the others used 5 minutes."""
    history_1h_turns: int = 0
    """Turns whose history cache points used the 1-hour TTL."""
    cache_ttl_switches: int = 0
    """Turns that changed a cache point's TTL from the turn before (`auto` sessions)."""

    def plus(self, turn: TurnRecord) -> SessionUsage:
        """These totals with one more turn added (what the store adds atomically)."""
        usage = turn.usage
        ttl = turn.cache_ttl
        return SessionUsage(
            turns=self.turns + 1,
            input_tokens=self.input_tokens + int(usage.get("inputTokens", 0)),
            cache_read_input_tokens=self.cache_read_input_tokens + int(usage.get("cacheReadInputTokens", 0)),
            cache_write_input_tokens=self.cache_write_input_tokens
            + int(usage.get("cacheWriteInputTokens", 0)),
            output_tokens=self.output_tokens + int(usage.get("outputTokens", 0)),
            cost_usd=round(self.cost_usd + turn.cost_usd, 8),
            cache_breaks=self.cache_breaks + int(turn.cache_break),
            cost_without_cache_usd=round(self.cost_without_cache_usd + turn.cost_without_cache_usd, 8),
            snapshot_1h_turns=self.snapshot_1h_turns + int(ttl is not None and ttl.system == "1h"),
            history_1h_turns=self.history_1h_turns + int(ttl is not None and ttl.history == "1h"),
            cache_ttl_switches=self.cache_ttl_switches + int(turn.cache_ttl_switch),
        )


class SessionRecord(Model):
    """A session as stored. `base_system`, `snapshot` and `cache_ttl` never change after creation: they are
    the bytes every turn sends before the cache point (with `cache_ttl` `auto`, only the cache point's
    `ttl` varies from turn to turn; the turn records which). Only `status` and `ended_at` change (on end), and
    `usage` (the totals of its turns, added with each turn)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    tenant: TenantId
    namespace: NamespacePath
    actor: Annotated[str, Field(max_length=128)]
    base_system: str
    snapshot: str
    snapshot_sha256: Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]
    cache_ttl: CacheTtlMode
    status: SessionStatus = SessionStatus.OPEN
    created_at: datetime
    expires_at: datetime
    ended_at: datetime | None = None
    usage: SessionUsage = SessionUsage()

    @field_validator("id")
    @classmethod
    def _id(cls, value: str) -> str:
        if not is_valid_session_id(value):
            raise ValueError(f"invalid session id {value!r}")
        return value

    def is_expired(self, now: datetime) -> bool:
        return now >= self.expires_at

    def effective_status(self, now: datetime) -> EffectiveStatus:
        """`open`, `ended`, or `expired` (open but past its time to live)."""
        if self.status is SessionStatus.OPEN:
            return "expired" if self.is_expired(now) else "open"
        return "ended"


class TurnCacheTtl(Model):
    """The TTLs a turn used: the snapshot's (system) cache point and the history cache point closing each of
    its requests."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    system: CacheTtl
    history: CacheTtl


class TurnRecord(Model):
    """One completed turn: every message it added to the conversation (the user's text, the assistant's
    tool calls, the tool results, the final answer). Written once, and only when the whole turn succeeded."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    tenant: str
    session_id: str
    index: Annotated[int, Field(ge=0)]
    messages: list[Message]
    usage: dict[str, int] = Field(default_factory=dict)
    cost_usd: float = 0.0
    model_id: str = ""
    stop_reason: str = ""
    tool_calls: list[dict[str, Any]] = Field(default_factory=list)
    created_at: datetime
    cached_prefix_tokens: Annotated[int, Field(ge=0)] = 0
    """Tokens the turn's last model call left in the prompt cache (its cache read + write): what the next
    turn's first call should read back."""
    cache_break: bool = False
    """The turn's first call read less than the previous turn had left in the cache."""
    cost_without_cache_usd: float = 0.0
    cache_ttl: TurnCacheTtl | None = None
    """None on turns stored before TTLs were recorded (they used the session's fixed TTL)."""
    cache_ttl_switch: bool = False
    """A cache point's TTL differs from the turn before."""


class SessionStore(Protocol):
    """Sessions and their turns, for all tenants, keyed by tenant first (DynamoDB in AWS, SQLite locally)."""

    def create(self, session: SessionRecord) -> None:
        """Store a new session. Raises `ConcurrentModification` if the id already exists."""
        ...

    def count_open(
        self,
        tenant: str,
        now: datetime,
        *,
        limit: int,
        actor: str | None = None,
        namespace: str | None = None,
    ) -> int:
        """How many of the tenant's sessions are open (not ended) and unexpired at `now`, counted up to
        `limit` (a store may stop there: the caller only asks whether a cap is reached); with `actor`, only
        the sessions that actor (API key) started; with `namespace`, only those of that namespace."""
        ...

    def get(self, tenant: str, session_id: str) -> SessionRecord | None:
        """The session of this tenant, or None (also for another tenant's id). May return an expired session
        that the store has not purged yet; callers check `expires_at`."""
        ...

    def end(self, tenant: str, session_id: str, at: datetime) -> SessionRecord | None:
        """Mark the session ended at `at` (idempotent: an ended session is returned unchanged). None if it
        does not exist."""
        ...

    def append_turn(self, turn: TurnRecord, *, now: datetime) -> None:
        """Store a turn atomically, only if the session exists, is open and unexpired at `now`, and no turn
        with this index exists, and add its figures to the session's `usage` in the same atomic write
        (`SessionUsage.plus`). Raises `SessionClosed` or `ConcurrentModification` otherwise."""
        ...

    def list_turns(self, tenant: str, session_id: str) -> list[TurnRecord]:
        """Every turn of the session, by index."""
        ...


# --------------------------------------------------------------------------- the chat model


@dataclass(frozen=True)
class Usage:
    """Token usage in Bedrock's terms. `input_tokens` excludes the cached tokens: the prompt's total input
    is input + cache read + cache write. `cache_write_1h_input_tokens` is the part of the cache write made
    with the 1-hour TTL, and `write_ttls_known` says whether the provider reported that split (Bedrock's
    `cacheDetails`); without it a write is priced at the longest TTL the request asked for."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_input_tokens: int = 0
    cache_write_input_tokens: int = 0
    cache_write_1h_input_tokens: int = 0
    write_ttls_known: bool = False

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cache_read_input_tokens + other.cache_read_input_tokens,
            self.cache_write_input_tokens + other.cache_write_input_tokens,
            self.cache_write_1h_input_tokens + other.cache_write_1h_input_tokens,
            self.attributed and other.attributed,
        )

    @property
    def attributed(self) -> bool:
        """Every cache write is attributed to a TTL (none were made, or the split is known)."""
        return self.write_ttls_known or self.cache_write_input_tokens == 0

    @property
    def total_input_tokens(self) -> int:
        return self.input_tokens + self.cache_read_input_tokens + self.cache_write_input_tokens

    @property
    def cache_hit_ratio(self) -> float:
        """Share of the prompt's input tokens served from the cache (0 when there was no input)."""
        total = self.total_input_tokens
        return self.cache_read_input_tokens / total if total else 0.0

    def with_write_ttl(self, ttl: CacheTtl) -> Usage:
        """This usage with every unattributed cache write taken as written with `ttl` (the request's longest
        TTL: an upper bound on its price when the provider did not split the writes by TTL)."""
        if self.attributed:
            return replace(self, write_ttls_known=True)
        hour = self.cache_write_input_tokens if ttl == "1h" else 0
        return replace(self, cache_write_1h_input_tokens=hour, write_ttls_known=True)

    def as_bedrock(self) -> dict[str, int]:
        return {
            "inputTokens": self.input_tokens,
            "outputTokens": self.output_tokens,
            "cacheReadInputTokens": self.cache_read_input_tokens,
            "cacheWriteInputTokens": self.cache_write_input_tokens,
            "cacheWrite1hInputTokens": self.cache_write_1h_input_tokens,
        }

    @classmethod
    def from_bedrock(cls, usage: Mapping[str, Any]) -> Usage:
        details = usage.get("cacheDetails")
        hour = sum(
            int(detail.get("inputTokens", 0) or 0)
            for detail in details or ()
            if isinstance(detail, Mapping) and detail.get("ttl") == "1h"
        )
        return cls(
            input_tokens=int(usage.get("inputTokens", 0) or 0),
            output_tokens=int(usage.get("outputTokens", 0) or 0),
            cache_read_input_tokens=int(usage.get("cacheReadInputTokens", 0) or 0),
            cache_write_input_tokens=int(usage.get("cacheWriteInputTokens", 0) or 0),
            cache_write_1h_input_tokens=hour,
            write_ttls_known=isinstance(details, list),
        )


@dataclass(frozen=True)
class ToolUse:
    id: str
    name: str
    input: dict[str, Any]


@dataclass(frozen=True)
class ModelReply:
    """One model response. `content` holds the assistant's blocks in Converse shape (`text`, `toolUse`)."""

    content: list[dict[str, Any]]
    stop_reason: str
    usage: Usage = field(default_factory=Usage)

    @property
    def text(self) -> str:
        return "".join(block["text"] for block in self.content if "text" in block)

    @property
    def tool_uses(self) -> list[ToolUse]:
        uses = []
        for block in self.content:
            use = block.get("toolUse")
            if use is not None:
                raw = use.get("input")
                uses.append(
                    ToolUse(
                        id=str(use["toolUseId"]),
                        name=str(use["name"]),
                        input=raw if isinstance(raw, dict) else {},
                    )
                )
        return uses


class ChatModel(Protocol):
    """A conversational model with tool use and prompt caching (Bedrock Converse in AWS)."""

    @property
    def model_id(self) -> str: ...

    def converse(
        self,
        *,
        system: Sequence[SystemBlock],
        messages: Sequence[Message],
        tool_config: Mapping[str, Any] | None,
        inference_config: Mapping[str, Any],
    ) -> ModelReply:
        """Raises `UpstreamUnavailable` when the model stays throttled or unavailable after bounded retries,
        `UpstreamFailed` when it refuses the request or fails."""
        ...


class TokenCounter(Protocol):
    """Input tokens of a Converse-shaped request (Bedrock CountTokens in AWS; an estimator locally)."""

    def count(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        system: Sequence[Mapping[str, Any]] | None = None,
        tool_config: Mapping[str, Any] | None = None,
    ) -> int: ...
