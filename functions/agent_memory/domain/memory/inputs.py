"""What the memory service takes and gives: remember and recall inputs, decisions and reports."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum

from .. import safety
from ..records import MemoryRecord, MemoryType, Metadata, Source, Status, Tier
from .recall import ScoredRecord
from .reranking import RerankOutcome


class Decision(StrEnum):
    ADDED = "added"
    MERGED = "merged"
    REACTIVATED = "reactivated"
    SUPERSEDED = "superseded"
    LINKED = "linked"
    """Added, and linked to an older memory it possibly supersedes: both stay current, the newer ranks first."""
    OUTDATED = "outdated"
    """Stored as history: an existing memory already holds a newer value of the same fact (valid_from later)."""
    PENDING = "pending"
    QUARANTINED = "quarantined"
    REJECTED = "rejected"


@dataclass(frozen=True)
class RememberInput:
    content: str
    namespace: str
    type: MemoryType | None = None
    tier: Tier | None = None
    score: float | None = None
    half_life_hours: float | None = None
    metadata: Metadata = field(default_factory=dict)
    source: Source = field(default_factory=Source)
    valid_from: datetime | None = None
    context: str | None = None
    """Indexed with the memory for keyword search (`MemoryRecord.context`). None in a batch: the neighbouring
    items of the batch in the same namespace and session (see `batch_context`)."""

    def __post_init__(self) -> None:
        # A leading byte-order mark (an editor's encoding marker) is never part of a memory.
        object.__setattr__(self, "content", safety.normalise(self.content))


@dataclass(frozen=True)
class RememberResult:
    decision: Decision
    reason: str
    record: MemoryRecord | None
    related: list[MemoryRecord] = field(default_factory=list)
    """Records the decision touched: the one merged into, superseded, linked, or put in conflict with."""
    rule: str | None = None


@dataclass(frozen=True)
class RecallInput:
    query: str
    namespaces: tuple[str, ...]
    k: int = 10
    types: tuple[MemoryType, ...] = ()
    statuses: tuple[Status, ...] = ()
    as_of: datetime | None = None
    min_score: float | None = None
    mode: str = "hybrid"
    """hybrid | vector | keyword: the single-method modes exist for evaluation and debugging."""
    rerank: str | None = None
    """A second-stage reranker to reorder the top candidates (`reranking.RERANKERS`); None: the hybrid ranking
    alone (the default)."""


@dataclass(frozen=True)
class RecallResult:
    results: list[ScoredRecord]
    query_hash: str
    rerank: RerankOutcome | None = None
    """What the reranker did, when the recall asked for one."""


@dataclass(frozen=True)
class ConflictGroup:
    group: str
    records: list[MemoryRecord]


@dataclass(frozen=True)
class DecayReport:
    archived: list[MemoryRecord]
    examined: int
    dry_run: bool
