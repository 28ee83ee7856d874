"""Ports of the migration wing: its state, the tenant's vector indexes by name, the embedding cache, and the
time the backfill paces itself against. Adapters: `adapters/local/migration.py` (SQLite, local indexes,
files) and `adapters/aws/migration.py` (DynamoDB, S3 Vectors, S3)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from ..ports import SearchIndex, Vector
from ..records import EmbedderIdentity
from .model import ArchiveReceipt, DeadLetter, Migration, MigrationState


class MigrationStore(Protocol):
    def latest(self, tenant: str) -> Migration | None:
        """The tenant's most recent migration in any state (None before the first)."""
        ...

    def create(self, migration: Migration) -> None:
        """Store a new migration. Raises `Conflict` when the tenant has one that is not finished (archived or
        rolled back): one migration per tenant at a time, enforced by the store atomically."""
        ...

    def save(self, migration: Migration, *, expected_version: int, expected_state: MigrationState) -> None:
        """Replace the migration if its stored version and state are still the expected ones, atomically;
        otherwise raise `ConcurrentModification` and change nothing."""
        ...

    def add_dead_letters(self, tenant: str, migration_id: str, letters: Sequence[DeadLetter]) -> None:
        """Insert or replace dead letters by record id."""
        ...

    def dead_letters(self, tenant: str, migration_id: str, limit: int = 100) -> list[DeadLetter]: ...

    def count_dead_letters(self, tenant: str, migration_id: str) -> int: ...

    def remove_dead_letters(self, tenant: str, migration_id: str, record_ids: Sequence[str]) -> None: ...


class IndexCatalog(Protocol):
    """The tenant's vector indexes by name ("" = the deployment's original index)."""

    def index(self, name: str) -> SearchIndex:
        """The `SearchIndex` over the indexes called `name` (one per tenant)."""
        ...

    def create(self, tenant: str, name: str, identity: EmbedderIdentity) -> None:
        """Create the tenant's index `name` for this fingerprint if missing (idempotent)."""
        ...

    def count(self, tenant: str, name: str) -> int:
        """Vectors in the tenant's index `name` (0 when it does not exist)."""
        ...

    def export(self, tenant: str, name: str, migration_id: str) -> ArchiveReceipt:
        """Copy every vector of the tenant's index `name` to archive objects with a manifest, then read the
        manifest back: `verified_count` is what the stored manifest says was written."""
        ...

    def drop(self, tenant: str, name: str) -> None:
        """Delete the tenant's index `name` and its vectors."""
        ...


class EmbeddingCache(Protocol):
    """Document vectors by (fingerprint, text hash), per tenant (the AWS table's keys start with the tenant):
    a text is never embedded twice by one model for one tenant."""

    def get_many(self, tenant: str, fingerprint: str, hashes: Sequence[str]) -> dict[str, Vector]: ...

    def put_many(self, tenant: str, fingerprint: str, vectors: dict[str, Vector]) -> None: ...


class Pacer(Protocol):
    """Monotonic seconds and sleeping, for the rate limiter and backoff (a fake one in tests and the bench)."""

    def monotonic(self) -> float: ...

    def sleep(self, seconds: float) -> None: ...


DriftMeter = Callable[[str, str, str], None]
"""Called with (tenant, index fingerprint, given fingerprint) each time the drift guard refuses (a metric)."""
