"""Ports: the only way the domain reaches storage, search, embeddings, files and time.

Each port is a `Protocol`; adapters live in `adapters/local` (SQLite, in-process index, offline embedder,
local directory) and `adapters/aws` (DynamoDB, S3 Vectors, Bedrock; S3 Files is a mounted file system, so the
file-store adapter is shared). Every call carries the tenant, and every query carries its namespace scope, so an
adapter can enforce isolation by key design (partition keys, one vector index per tenant, one directory).
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Generic, Protocol, TypeVar

from .records import (
    ChangeEntry,
    EmbedderIdentity,
    MemoryRecord,
    MemoryType,
    RecallLogEntry,
    Status,
    Tier,
)

Vector = list[float]
T = TypeVar("T")


class Embedding(list[float]):
    """A vector that names the model which made it. The memory service writes a vector to the index of *that*
    model: looking the tenant's model up again between embedding and writing could, across a migration's read
    switch, file a vector of one model under the other's fingerprint (two models of the same dimensions)."""

    __slots__ = ("identity",)

    def __init__(self, values: Sequence[float], identity: EmbedderIdentity) -> None:
        super().__init__(values)
        self.identity = identity


# --------------------------------------------------------------------------- time


class Clock(Protocol):
    def now(self) -> datetime:
        """Timezone-aware current time (UTC)."""
        ...


# --------------------------------------------------------------------------- records


@dataclass(frozen=True)
class RecordWrite:
    """Create (`expected_version is None`: must not exist) or replace a record whose stored version is
    `expected_version` and, when `expected_status` is set, whose stored status is `expected_status` (a state
    transition such as correct or archive names the state it leaves, so the store refuses it atomically once
    another request has moved the record on). The adapter stores `record` as given; the service has already
    bumped `record.version`."""

    record: MemoryRecord
    expected_version: int | None
    expected_status: Status | None = None


@dataclass(frozen=True)
class RecordQuery:
    """Filters for listing records of one tenant. Empty tuples mean "any".

    `namespaces_below`: records of every namespace strictly below one of these (`/me` covers `/me/users/u-1`,
    never `/me` itself nor `/meta`). With `namespaces` too, a record matches when its namespace is one of
    `namespaces` OR below one of `namespaces_below` (a tree is `namespaces=(p,), namespaces_below=(p,)`).
    Order: a listing with `namespaces_below` is by namespace, then (created_at, id); any other by (created_at,
    id). SQLite reads a tree as index ranges, DynamoDB as key ranges of its tree index (a page reads about the
    page, not the tenant). A DynamoDB tenant whose tree-index backfill is not complete gets the old path: a
    filtered read of its records in creation order, a page of which may hold fewer than `limit` items (even
    none) with a `next_cursor` when its read budget ran out first."""

    namespaces: tuple[str, ...] = ()
    namespaces_below: tuple[str, ...] = ()
    types: tuple[MemoryType, ...] = ()
    statuses: tuple[Status, ...] = ()
    tiers: tuple[Tier, ...] = ()
    conflict_group: str | None = None
    last_access_before: datetime | None = None
    limit: int = 50
    cursor: str | None = None


@dataclass(frozen=True)
class Page(Generic[T]):
    items: list[T]
    next_cursor: str | None = None
    skipped: int = 0
    """Stored items of this page that could not be read (left out and logged; `agent-memory repair`)."""


@dataclass(frozen=True)
class UnreadableRecord:
    """A stored record that no longer validates as a `MemoryRecord` (e.g. null in a numeric or metadata
    field, written by an older version). Stores skip such records on every read; repair finds them here.
    `body` is the record's JSON exactly as stored; the other fields come from the store's own columns."""

    tenant: str
    record_id: str
    namespace: str
    type: str
    status: str
    version: int
    created_at: str
    body: str
    error: str


@dataclass(frozen=True)
class RecordCounts:
    by_status: dict[str, int] = field(default_factory=dict)
    by_tier: dict[str, int] = field(default_factory=dict)
    by_type: dict[str, int] = field(default_factory=dict)


class RecordStore(Protocol):
    """Records, their change log and the recall log, for one deployment (all tenants, keyed by tenant)."""

    def commit(self, writes: Sequence[RecordWrite], changes: Sequence[ChangeEntry]) -> None:
        """Apply all writes and append all change entries atomically, or nothing.

        Raises `ConcurrentModification` when a record's stored version differs from `expected_version` (or
        its stored status from `expected_status`), or a record to create already exists. The check and the
        writes are one atomic step: of two commits expecting the same version, exactly one succeeds."""
        ...

    def get(self, tenant: str, record_id: str) -> MemoryRecord | None: ...

    def get_many(self, tenant: str, record_ids: Sequence[str]) -> list[MemoryRecord]:
        """The records that exist among `record_ids`, in the order given. Missing ids are skipped."""
        ...

    def find_by_hash(self, tenant: str, namespace: str, content_hash: str) -> list[MemoryRecord]: ...

    def list(self, tenant: str, query: RecordQuery) -> Page[MemoryRecord]:
        """Records ordered by (created_at, id); `cursor` is opaque and comes from a previous page."""
        ...

    def counts(self, tenant: str, namespace: str | None = None) -> RecordCounts: ...

    def list_changes(
        self,
        tenant: str,
        *,
        record_id: str | None = None,
        namespace: str | None = None,
        limit: int = 100,
        cursor: str | None = None,
    ) -> Page[ChangeEntry]:
        """Change entries, oldest first."""
        ...

    def log_recall(self, entry: RecallLogEntry) -> None: ...

    def list_recalls(self, tenant: str, namespace: str, since: datetime) -> builtins.list[RecallLogEntry]: ...

    def touch(self, tenant: str, record_ids: Sequence[str], at: datetime) -> None:
        """Set last_access_at=at and add 1 to access_count for each record, without a version bump
        (access bookkeeping is not a content mutation and must never conflict with a real update)."""
        ...

    def unreadable(self, tenant: str, namespace: str | None = None) -> builtins.list[UnreadableRecord]:
        """Every stored record of the namespace (or tenant) that fails to load: reads them all, O(n), for
        the repair command only. A later `commit` with `expected_version=version` replaces one."""
        ...


# --------------------------------------------------------------------------- search


@dataclass(frozen=True)
class IndexEntry:
    """What the search index keeps per record: the vector, the text for keyword search and the
    filterable fields. Content is never used as filterable metadata."""

    record_id: str
    namespace: str
    type: MemoryType
    status: Status
    text: str
    vector: Vector
    embedded_text: str = ""
    """What `vector` was computed from when it is not `text` (the record's content without its context): a
    second index written during an embedding migration embeds this with its own model."""


@dataclass(frozen=True)
class IndexFilter:
    namespaces: tuple[str, ...]
    types: tuple[MemoryType, ...] = ()
    statuses: tuple[Status, ...] = (Status.ACTIVE,)


@dataclass(frozen=True)
class Hit:
    record_id: str
    score: float
    """Vector hits: cosine similarity in [-1, 1]. Keyword hits: BM25 score (higher is better)."""


class SearchIndex(Protocol):
    """Vector similarity and keyword (BM25) search over one index per tenant."""

    def ensure_tenant(self, tenant: str, identity: EmbedderIdentity) -> None:
        """Create the tenant's index for this embedder identity if missing. Raises `EmbedderMismatch` when the
        tenant's index holds vectors of a different identity."""
        ...

    def upsert(self, tenant: str, identity: EmbedderIdentity, entries: Sequence[IndexEntry]) -> None: ...

    def set_status(self, tenant: str, record_ids: Sequence[str], status: Status) -> None: ...

    def delete(self, tenant: str, record_ids: Sequence[str]) -> None: ...

    def query_vector(
        self, tenant: str, identity: EmbedderIdentity, vector: Vector, *, k: int, where: IndexFilter
    ) -> list[Hit]: ...

    def query_keyword(self, tenant: str, text: str, *, k: int, where: IndexFilter) -> list[Hit]: ...


# --------------------------------------------------------------------------- embeddings


class Embedder(Protocol):
    @property
    def identity(self) -> EmbedderIdentity: ...

    def embed_documents(self, texts: Sequence[str]) -> list[Vector]: ...

    def embed_query(self, text: str) -> Vector: ...


# --------------------------------------------------------------------------- memory files


class FileStore(Protocol):
    """Markdown memory files of one namespace, addressed by a relative POSIX path (`MEMORY.md`,
    `memory/2026-11-30.md`, `skills/x/SKILL.md`). Implementations confine paths to the namespace directory
    (raise `PathEscape`), write atomically and serialise writers of one file with a lock."""

    def read(self, tenant: str, namespace: str, path: str) -> str | None: ...

    def update(self, tenant: str, namespace: str, path: str, change: Callable[[str | None], str]) -> str:
        """Under the file's lock: read the current text (None if absent), compute `change(text)`, write the
        result atomically (temp file + rename) and return it. If `change` raises, nothing is written."""
        ...

    def append(self, tenant: str, namespace: str, path: str, text: str) -> None: ...

    def list(self, tenant: str, namespace: str, prefix: str = "") -> list[str]: ...

    def delete(self, tenant: str, namespace: str, path: str) -> bool:
        """Under the file's lock, remove the file; False when it was already absent. Only the service's own
        housekeeping calls it (the retention of `.dreams/`); memory is archived, never deleted."""
        ...


@dataclass(frozen=True)
class IndexProgress:
    """What one bounded step of an index backfill did for a tenant: records read, keys added, and whether
    the tenant's records are now all indexed."""

    tenant: str
    read: int
    updated: int
    complete: bool


class IndexBackfill(Protocol):
    """Completes a secondary index over a tenant's older records, resumably (DynamoDB: the namespace-tree
    index `gsi3`). A runtime whose store needs no backfill (SQLite) has none."""

    def backfill_tree_index(self, tenant: str, *, max_records: int | None = None) -> IndexProgress:
        """Index at most `max_records` more records (all when None) from where the last step stopped; a
        complete tenant reads nothing."""
        ...


# --------------------------------------------------------------------------- workflows


class DreamLauncher(Protocol):
    """Starts the dreaming workflow asynchronously (Step Functions in AWS) for one tenant."""

    def start(self, tenant: str, namespaces: Sequence[str]) -> str:
        """Start a sweep of `namespaces` (all of the tenant's when empty); returns the execution's id."""
        ...
