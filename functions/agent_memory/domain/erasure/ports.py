"""The erasure wing's ports: where plans are kept, and the stores only a runtime can reach (rows of the record
store, sessions, idempotency records, the embedding cache). Memory files and the search index are reached
through the shared `FileStore` and `SearchIndex` ports (see service.py)."""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import Protocol

from .model import EraseScope, PurgePlan, StoreFinding


class PurgeLedger(Protocol):
    """Purge plans and their tombstones (plan id, who, when, why, content hashes, report). Survives the purge
    of its own tenant: the proof that the tenant was erased."""

    def save(self, plan: PurgePlan, *, expected_version: int | None) -> None:
        """Create (`expected_version is None`) or replace the plan stored at `expected_version`; raise
        `ConcurrentModification` otherwise (two executes of one plan: one wins, the other retries)."""
        ...

    def get(self, tenant: str, plan_id: str) -> PurgePlan | None: ...

    def list(self, tenant: str, limit: int = 50) -> list[PurgePlan]:
        """Newest first."""
        ...

    def executing(self, tenant: str) -> builtins.list[PurgePlan]:
        """The tenant's plans in state `executing` (the write fence reads them on every write)."""
        ...


class ContentStore(Protocol):
    """One place the service persists content, as the purge sees it. `find` is used by the plan (what would
    be removed) and by the verification (what is left: must be nothing); `erase` is idempotent."""

    @property
    def name(self) -> str: ...

    def find(self, scope: EraseScope) -> StoreFinding: ...

    def erase(self, scope: EraseScope, *, actor: str, reason: str, plan_id: str) -> int:
        """Remove (or redact, or invalidate) everything of `scope` in this store; return how many items."""
        ...


class RecordEraser(ContentStore, Protocol):
    """The record store's rows: records, their hash/conflict pointers, their change log and the recall
    entries that name them. After `erase`, the service appends one tombstone change entry per record."""

    def namespaces(self, tenant: str) -> Sequence[str]:
        """Every namespace the tenant has records, changes or recalls in."""
        ...


class PurgeLauncher(Protocol):
    """Runs a large purge as a workflow (Step Functions in AWS): one `ErasureService.run_step` per task."""

    def start(self, tenant: str, plan_id: str) -> str:
        """Start (or find, for the same plan) the workflow; returns the execution's id."""
        ...


class Sealer(Protocol):
    """Runs once a purge is completed and its plan no longer holds the texts: makes sure the bytes of the
    plan's own store (the ledger's database) do not hold them either (locally: secure delete, vacuum,
    checkpoint, then a raw search). A finding turns the purge back to `incomplete`."""

    def seal(self, scope: EraseScope) -> StoreFinding: ...


class ProcessCaches(Protocol):
    """What this process keeps across requests that was derived from a tenant's content (recall's query
    vectors and speakers met: `MemoryService.forget_cached`). A purge that ends in this process drops the
    tenant's entries (of the purged namespaces, for a namespace, memory or subject purge) at once; another
    process's entries leave with their age bound (docs/reference/erasure.md)."""

    def forget_cached(self, tenant: str, namespaces: Sequence[str] = ()) -> int: ...
