"""The embedding migration's persisted state: one migration per tenant at a time, a state machine with an
audit trail, and the two index bindings (source: today's index and model; target: the new ones).

    planned → dual_write → backfilling → verifying → switched → archived
    rolled_back from any state before archived; verifying → backfilling to retry dead letters.

Every transition is saved with the version and state it was read with (SQLite: a guarded UPDATE; DynamoDB: a
ConditionExpression), so of two concurrent transitions exactly one wins (`ConcurrentModification`)."""

from __future__ import annotations

import hashlib
from datetime import datetime
from enum import StrEnum
from typing import Annotated

from pydantic import ConfigDict, Field

from ..model import Model
from ..records import UtcDatetime, sortable_id


class MigrationState(StrEnum):
    PLANNED = "planned"
    DUAL_WRITE = "dual_write"
    BACKFILLING = "backfilling"
    VERIFYING = "verifying"
    SWITCHED = "switched"
    ARCHIVED = "archived"
    ROLLED_BACK = "rolled_back"


S = MigrationState
NEXT_STATES: dict[MigrationState, frozenset[MigrationState]] = {
    S.PLANNED: frozenset({S.DUAL_WRITE, S.ROLLED_BACK}),
    S.DUAL_WRITE: frozenset({S.BACKFILLING, S.ROLLED_BACK}),
    S.BACKFILLING: frozenset({S.VERIFYING, S.ROLLED_BACK}),
    S.VERIFYING: frozenset({S.SWITCHED, S.BACKFILLING, S.ROLLED_BACK}),
    S.SWITCHED: frozenset({S.ARCHIVED, S.ROLLED_BACK}),
    S.ARCHIVED: frozenset(),
    S.ROLLED_BACK: frozenset(),
}
FINISHED = frozenset({S.ARCHIVED, S.ROLLED_BACK})
"""States after which the tenant may plan another migration."""
WRITES_TARGET = frozenset({S.DUAL_WRITE, S.BACKFILLING, S.VERIFYING, S.SWITCHED, S.ARCHIVED})
READS_TARGET = frozenset({S.SWITCHED, S.ARCHIVED})
WRITES_SOURCE = frozenset(set(MigrationState) - {S.ARCHIVED})


class IndexBinding(Model):
    """One vector index of the tenant and the embedder that fills it. `index` "" is the deployment's original
    index (`mem-<tenant>` in AWS); a migration's target gets a suffix (`mem-<tenant>-e1`). `embedder` is the
    spec the runtime builds the model from ("" = the deployment's configured embedder)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    index: str = ""
    embedder: str = ""
    fingerprint: str


class AuditEntry(Model):
    model_config = ConfigDict(extra="forbid")

    at: UtcDatetime
    actor: str
    from_state: MigrationState | None
    to_state: MigrationState
    note: str = ""


class Budget(Model):
    """The backfill's pace: embedding requests and tokens per minute (the provider's quota share given to the
    migration), records per page, texts per embedding request, attempts before a record is dead-lettered."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    rpm: Annotated[int, Field(ge=1, le=1_000_000)] = 600
    tpm: Annotated[int, Field(ge=1, le=100_000_000)] = 300_000
    page_size: Annotated[int, Field(ge=1, le=500)] = 100
    batch_size: Annotated[int, Field(ge=1, le=100)] = 1
    max_attempts: Annotated[int, Field(ge=1, le=20)] = 6


class Progress(Model):
    model_config = ConfigDict(extra="forbid")

    cursor: str | None = None
    pages_done: int = 0
    done: bool = False
    records_total: int = 0
    """Records to backfill, counted when the backfill starts (the store's counts; coverage uses a fresh one)."""
    records_seen: int = 0
    written: int = 0
    skipped_changed: int = 0
    """Records changed while their page ran: the dual write already wrote their new version."""
    dead_lettered: int = 0
    embed_requests: int = 0
    embed_retries: int = 0
    cache_hits: int = 0
    cache_misses: int = 0
    tokens: int = 0
    busy_seconds: float = 0.0
    """Time spent inside backfill pages (paced time included): the denominator of the rate."""
    namespaces: list[str] = Field(default_factory=list)
    """Namespaces the pages met (at most 200): where verification samples recent recall-log queries."""


class Verification(Model):
    model_config = ConfigDict(extra="forbid")

    at: UtcDatetime
    records: int
    target_vectors: int
    coverage: float
    sample_queries: int
    overlap_at_10: float | None
    passed: bool
    reasons: list[str] = Field(default_factory=list)


class ArchiveReceipt(Model):
    """Where the source index's vectors went before it was deleted, and how many the manifest holds."""

    model_config = ConfigDict(extra="forbid")

    location: str
    manifest: str
    vectors: int
    verified_count: int


class Migration(Model):
    model_config = ConfigDict(extra="forbid")

    tenant: str
    id: str = Field(default_factory=lambda: sortable_id("mig"))
    generation: int = 1
    state: MigrationState = MigrationState.PLANNED
    version: int = 1
    source: IndexBinding
    target: IndexBinding
    budget: Budget = Field(default_factory=Budget)
    min_coverage: Annotated[float, Field(ge=0.0, le=1.0)] = 0.99
    min_overlap_at_10: Annotated[float, Field(ge=0.0, le=1.0)] = 0.5
    created_at: UtcDatetime
    updated_at: UtcDatetime
    progress: Progress = Field(default_factory=Progress)
    verification: Verification | None = None
    archive: ArchiveReceipt | None = None
    execution: str | None = None
    """The backfill run's id (a Step Functions execution ARN in AWS, a worker thread's name locally)."""
    history: list[AuditEntry] = Field(default_factory=list)

    @property
    def finished(self) -> bool:
        return self.state in FINISHED

    def moved(self, to: MigrationState, *, at: datetime, actor: str, note: str = "") -> Migration:
        """The next version of this migration in state `to`, with the audit entry (the caller saves it guarded
        by this version and state). Raises `ValueError` for a transition the state machine does not allow."""
        if to not in NEXT_STATES[self.state]:
            raise ValueError(f"a migration in state {self.state.value} cannot move to {to.value}")
        entry = AuditEntry(at=at, actor=actor, from_state=self.state, to_state=to, note=note)
        return self.model_copy(
            update={
                "state": to,
                "version": self.version + 1,
                "updated_at": at,
                "history": [*self.history, entry],
            }
        )

    def bumped(self, at: datetime, **changes: object) -> Migration:
        """The next version with `changes` (a checkpoint, a verification) in the same state."""
        return self.model_copy(update={**changes, "version": self.version + 1, "updated_at": at})


class DeadLetter(Model):
    """A record the backfill could not embed or write after its attempts; `migrate retry` runs them again."""

    model_config = ConfigDict(extra="forbid")

    record_id: str
    error: str
    attempts: int
    at: UtcDatetime


def text_hash(text: str) -> str:
    """The embedding cache's content key: SHA-256 of the exact text embedded (no normalisation: two texts that
    differ in case or spacing can embed differently)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
