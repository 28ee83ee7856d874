"""Request and response models: the OpenAPI contract of /v1. Shape checks happen here (422 on a wrong type or
a missing field); domain rules (content length, metadata size, caps) are checked by the services so that the
local and AWS runtimes answer identically."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import ConfigDict, Field

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

Namespace = Annotated[
    str,
    Field(
        pattern=NAMESPACE_PATTERN,
        max_length=520,
        description="A path such as /projects/billing or /users/u-42",
        examples=["/projects/billing"],
    ),
]


class Strict(Model):
    model_config = ConfigDict(extra="forbid")


class SourceIn(Strict):
    kind: SourceKind = SourceKind.API
    ref: Annotated[str, Field(max_length=512)] = ""


class RememberRequest(Strict):
    content: Annotated[str, Field(min_length=1, description="The memory, in plain language")]
    namespace: Namespace
    type: MemoryType | None = Field(None, description="Explicit type; otherwise the classifier decides")
    tier: Tier | None = None
    score: Annotated[float, Field(ge=0, le=1)] | None = None
    half_life_hours: Annotated[float, Field(gt=0, le=24 * 365 * 100)] | None = None
    metadata: Metadata = Field(default_factory=dict)
    source: SourceIn | None = None
    valid_from: datetime | None = None


class RememberBatchRequest(Strict):
    items: Annotated[list[RememberRequest], Field(min_length=1)]


class RememberResponse(Model):
    decision: Literal["added", "merged", "reactivated", "superseded", "pending", "quarantined", "rejected"]
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
    k: Annotated[int, Field(ge=1, le=100)] = 10
    types: list[MemoryType] = Field(default_factory=list)
    statuses: list[Status] = Field(default_factory=list)
    as_of: datetime | None = Field(None, description="Return what was valid in the world at this time")
    min_score: Annotated[float, Field(ge=0, le=1)] | None = None
    mode: Literal["hybrid", "vector", "keyword"] = "hybrid"


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


class RecallResponse(Model):
    query_hash: str
    results: list[RecallHit]


class MemoryPage(Model):
    items: list[MemoryRecord]
    next_cursor: str | None = None


class UpdateRequest(Strict):
    expected_version: Annotated[int, Field(ge=0)] | None = None
    score: Annotated[float, Field(ge=0, le=1)] | None = None
    half_life_hours: Annotated[float, Field(gt=0)] | None = None
    metadata: Metadata | None = None
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


class StatsResponse(Model):
    namespace: str
    by_status: dict[str, int]
    by_tier: dict[str, int]
    by_type: dict[str, int]
    files: dict[str, dict[str, int]]


class DecayRequest(Strict):
    namespace: Namespace | None = None
    dry_run: bool = False


class DecayResponse(Model):
    dry_run: bool
    examined: int
    archived: list[MemoryRecord]


class ErrorBody(Model):
    error: str
    message: str
    details: dict = Field(default_factory=dict)
