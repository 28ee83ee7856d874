"""Request and response models: the OpenAPI contract of /v1. Shape checks happen here (422 on a wrong type or
a missing field); domain rules (content length, metadata size, caps) are checked by the services so that the
local and AWS runtimes answer identically."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Literal

from pydantic import AfterValidator, ConfigDict, Field, ValidationInfo, field_validator

from ..domain.model import Model
from ..domain.records import (
    NAMESPACE_PATTERN,
    ChangeEntry,
    MemoryRecord,
    MemoryType,
    Metadata,
    SourceKind,
    Status,
    Tier,
)
from . import strict_types

Namespace = Annotated[
    str,
    Field(
        pattern=NAMESPACE_PATTERN,
        max_length=520,
        description="A path such as /projects/billing or /users/u-42",
        examples=["/projects/billing"],
    ),
]


MAX_HALF_LIFE_HOURS = 24 * 365 * 100
"""100 years: longer is "never decays" in practice."""
MAX_VERSION = 1_000_000_000

METADATA_DESCRIPTION = (
    "Flat object: string keys; values are strings, integers, finite numbers or booleans (no nesting, no "
    "NaN/Infinity). At most 20 keys and 2,048 bytes as compact JSON by default (413 over)."
)
TIME_ZONE_RULE = (
    "An ISO 8601 date-time WITH a time zone, e.g. 2030-01-01T00:00:00Z or 2030-01-01T09:00:00+09:00. "
    "A date-time without one (2030-01-01T00:00:00, 2030-01-01) is refused with 422: add 'Z' or a UTC offset."
)


def _zoned(value: datetime) -> datetime:
    if value.utcoffset() is None:
        raise ValueError(
            "date-time has no time zone: add 'Z' (UTC) or a UTC offset, e.g. 2030-01-01T00:00:00Z"
        )
    try:
        value.astimezone(UTC)
    except OverflowError as error:
        raise ValueError("date-time is out of range once converted to UTC") from error
    return value


ZonedDatetime = Annotated[datetime, AfterValidator(_zoned)]
"""Naive date-times are refused, not guessed: an explicit zone is the only unambiguous reading."""


class Strict(Model):
    """Request bodies: unknown fields and non-finite numbers (NaN, Infinity, 1e400, which Python's json
    accepts) are refused with 422 naming the field; metadata values are checked by `Metadata` itself.

    JSON types are taken as sent (`strict_types`): a number is a JSON number, not "0.5"; a boolean is true or
    false, not "yes" or 1; a date-time is an ISO 8601 string, not an epoch number; a date is YYYY-MM-DD, not a
    date-time."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    @field_validator("*", mode="before")
    @classmethod
    def _json_types_as_sent(cls, value: object, info: ValidationInfo) -> object:
        field = cls.model_fields.get(info.field_name or "")
        if field is not None:
            strict_types.check(field, value)
        return value


class SourceIn(Strict):
    kind: SourceKind = SourceKind.API
    ref: Annotated[str, Field(max_length=512)] = ""


class RememberRequest(Strict):
    content: Annotated[str, Field(min_length=1, description="The memory, in plain language")]
    namespace: Namespace
    type: MemoryType | None = Field(None, description="Explicit type; otherwise the classifier decides")
    tier: Tier | None = None
    score: Annotated[float, Field(ge=0, le=1)] | None = Field(
        None, description="Importance in [0, 1]; otherwise set by type (e.g. 0.9 for preferences)"
    )
    half_life_hours: Annotated[float, Field(gt=0, le=MAX_HALF_LIFE_HOURS)] | None = Field(
        None, description="Decay half-life in hours, > 0 and ≤ 876,000 (100 years); otherwise set by type"
    )
    metadata: Metadata = Field(default_factory=dict, description=METADATA_DESCRIPTION)
    source: SourceIn | None = None
    context: Annotated[str, Field(max_length=2000)] | None = Field(
        default=None,
        description="Text indexed with the memory for keyword search only, e.g. the conversation turns around "
        "it (never part of the content, the embedding or the duplicate checks). Omitted in a batch: the "
        "neighbouring items of the batch with the same namespace and metadata session/session_id/session_date",
    )
    valid_from: ZonedDatetime | None = Field(
        None, description="When the fact became true in the world (default: now). " + TIME_ZONE_RULE
    )


class RememberBatchRequest(Strict):
    items: Annotated[list[RememberRequest], Field(min_length=1)]


class RememberResponse(Model):
    decision: Literal[
        "added",
        "merged",
        "reactivated",
        "superseded",
        "linked",
        "outdated",
        "pending",
        "quarantined",
        "rejected",
    ]
    reason: str
    rule: str | None = None
    memory: MemoryRecord | None = None
    related: list[MemoryRecord] = Field(default_factory=list)


class RememberBatchResponse(Model):
    results: list[RememberResponse]
    counts: dict[str, int]


class RecallRequest(Strict):
    query: Annotated[str, Field(min_length=1)]
    namespaces: Annotated[list[Namespace], Field(min_length=1, max_length=20)]
    k: Annotated[int, Field(ge=1, le=100, description="Results to return, 1-100")] = 10
    types: list[MemoryType] = Field(default_factory=list)
    statuses: list[Status] = Field(default_factory=list)
    as_of: ZonedDatetime | None = Field(
        None, description="Return what was valid in the world at this time. " + TIME_ZONE_RULE
    )
    min_score: Annotated[float, Field(ge=0, le=1)] | None = Field(
        None, description="Drop results scoring below this, in [0, 1]"
    )
    mode: Literal["hybrid", "vector", "keyword"] = "hybrid"
    rerank: Literal["bedrock"] | None = Field(
        None,
        description="A second-stage reranker for this recall: `bedrock` sends the hybrid ranking's top 50 "
        "candidates to Amazon Bedrock's Rerank API (one billed call: $1.00 per 1,000 reranked recalls with "
        "Amazon Rerank 1.0, $2.00 with Cohere Rerank 3.5; adds ~0.1-0.5 s, estimated) and returns them in its "
        "order. Only on an AWS deployment that enables it (the `rerank` setting), else 422. If the reranker "
        "fails or times out, the recall answers in the hybrid order and `rerank.fallback` says why. Omit it "
        "(default) for the hybrid ranking alone",
    )


class RerankReport(Model):
    """What the second-stage reranker did for this recall (null when the recall asked for none)."""

    reranker: str = Field(description="The reranker the recall named, e.g. `bedrock`")
    model: str = Field(description="The model it called, e.g. `amazon.rerank-v1:0`")
    applied: bool = Field(
        description="true: the results are in the reranker's order; false: the hybrid order was kept"
    )
    candidates: int = Field(
        description="How many of the hybrid ranking's top candidates were sent (one call)"
    )
    latency_ms: float = Field(description="Time the reranker took, including a failed attempt")
    fallback: str | None = Field(
        None, description="Why the hybrid order was kept (the reranker's error), when `applied` is false"
    )


class RecallHit(Model):
    memory: MemoryRecord
    score: float
    relevance: float
    recency: float
    importance: float
    strength: float
    similarity: float | None
    keyword_score: float | None
    vector_rank: int | None
    keyword_rank: int | None
    rerank_score: float | None = Field(
        None,
        description="The reranker's relevance for this hit when the recall was reranked (`score` stays the "
        "hybrid score; the order is the reranker's); null otherwise",
    )


class RecallResponse(Model):
    query_hash: str
    results: list[RecallHit]
    rerank: RerankReport | None = Field(None, description="Set when the recall asked for a reranker")


class MemoryPage(Model):
    items: list[MemoryRecord]
    next_cursor: str | None = None
    skipped: int = Field(
        0,
        description="Stored memories of this page that could not be read and were left out (logged); an "
        "operator fixes them with `agent-memory repair`",
    )
    empty_reason: str | None = Field(
        None,
        description="Set on an empty first page: why it is empty (with include_children=false, also where "
        "the memories are: the namespaces below that hold some)",
    )
    child_namespaces: list[str] = Field(
        default_factory=list,
        description="With `empty_reason`: namespaces below the one asked for that hold matching memories "
        "(at most 20, from the first 100 such memories), set with include_children=false; list them by leaving "
        "include_children out",
    )


class UpdateRequest(Strict):
    expected_version: Annotated[int, Field(ge=0, le=MAX_VERSION)] | None = Field(
        None, description="Refuse the update (409) unless the memory is at this version"
    )
    score: Annotated[float, Field(ge=0, le=1)] | None = Field(None, description="Importance in [0, 1]")
    half_life_hours: Annotated[float, Field(gt=0, le=MAX_HALF_LIFE_HOURS)] | None = Field(
        None, description="Decay half-life in hours, > 0 and ≤ 876,000 (100 years)"
    )
    metadata: Metadata | None = Field(None, description="Replaces the metadata. " + METADATA_DESCRIPTION)
    type: MemoryType | None = None
    tier: Tier | None = None


class CorrectRequest(Strict):
    content: Annotated[str, Field(min_length=1)]
    reason: Annotated[str, Field(max_length=500)] = ""


class CorrectResponse(Model):
    previous: MemoryRecord
    memory: MemoryRecord


class ReasonRequest(Strict):
    reason: Annotated[str, Field(max_length=500)] = ""


class HistoryResponse(Model):
    lineage: list[MemoryRecord]
    changes: list[ChangeEntry]


class ChangePage(Model):
    items: list[ChangeEntry]
    next_cursor: str | None = None


class ConflictOut(Model):
    group: str
    memories: list[MemoryRecord]


class ConflictList(Model):
    conflicts: list[ConflictOut]


class ResolveRequest(Strict):
    keep: Annotated[list[str], Field(min_length=1, max_length=20)]
    reason: Annotated[str, Field(max_length=500)] = ""


class ResolveResponse(Model):
    memories: list[MemoryRecord]


FileKind = Literal["memory", "user"]


class FileEntryAdd(Strict):
    namespace: Namespace
    content: Annotated[str, Field(min_length=1)]


class FileEntryReplace(Strict):
    namespace: Namespace
    match: Annotated[str, Field(min_length=1, max_length=2000)]
    content: Annotated[str, Field(min_length=1)]


class FileEntryRemove(Strict):
    namespace: Namespace
    match: Annotated[str, Field(min_length=1, max_length=2000)]


class FileOut(Model):
    kind: str
    path: str
    entries: list[str]
    text: str
    used: int
    limit: int


class DailyAppend(Strict):
    namespace: Namespace
    text: Annotated[str, Field(min_length=1)]


class DailyOut(Model):
    path: str
    text: str


class RecallLatencyOut(Model):
    p50_ms: float
    p95_ms: float
    samples: int = Field(description="Recalls of the namespace in the window (the last 1,000)")


class StatsResponse(Model):
    namespace: str
    by_status: dict[str, int]
    by_tier: dict[str, int]
    by_type: dict[str, int]
    files: dict[str, dict[str, int]]
    recall_latency: RecallLatencyOut | None = Field(
        None,
        description="Recall latency measured by the local server since it started (request to answer, "
        "in process); null before the first recall, and in AWS, where the RecallLatency metric on the "
        "stack's CloudWatch dashboard has it",
    )


class DecayRequest(Strict):
    namespace: Namespace | None = None
    dry_run: bool = False


class DecayResponse(Model):
    dry_run: bool
    examined: int
    archived: list[MemoryRecord]


class ErrorBody(Model):
    """Every refusal of the API, from either runtime."""

    error: str = Field(description="A stable code to branch on, e.g. `invalid_request`, `not_found`")
    message: str = Field(description="What went wrong and what to do about it, for a person")
    details: dict = Field(
        default_factory=dict, description="Specifics of the code, e.g. the fields and their problems, a limit"
    )
