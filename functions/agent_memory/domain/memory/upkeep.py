"""Upkeep: forgetting (archive what decayed; never delete) and rebuilding the search index from the store."""

from __future__ import annotations

from datetime import timedelta

from ..errors import ConcurrentModification
from ..ports import RecordQuery
from ..records import ChangeOperation, MemoryRecord, Status
from . import limits
from .inputs import DecayReport
from .lifecycle import Lifecycle
from .parts import MemoryParts, entry
from .strength import is_decayed, strength


class Upkeep:
    def __init__(self, parts: MemoryParts, lifecycle: Lifecycle) -> None:
        self.parts = parts
        self.lifecycle = lifecycle

    def archive_decayed(
        self, tenant: str, namespace: str | None = None, *, actor: str, dry_run: bool = False
    ) -> DecayReport:
        """Archive active records whose strength fell below the threshold and that were not accessed for
        `archive_unused_days`. Archived records stay restorable; nothing is deleted."""
        if namespace is not None:
            limits.check_namespace(namespace)
        now = self.parts.now()
        cutoff = now - timedelta(days=self.parts.policy.archive_unused_days)
        archived: list[MemoryRecord] = []
        examined = 0
        cursor: str | None = None
        while True:
            page = self.parts.store.list(
                tenant,
                RecordQuery(
                    namespaces=(namespace,) if namespace else (),
                    statuses=(Status.ACTIVE,),
                    last_access_before=cutoff,
                    limit=100,
                    cursor=cursor,
                ),
            )
            for record in page.items:
                examined += 1
                if not is_decayed(
                    record,
                    now,
                    below=self.parts.policy.archive_below_strength,
                    unused_days=self.parts.policy.archive_unused_days,
                ):
                    continue
                reason = (
                    f"strength {strength(record, now):.3f} < {self.parts.policy.archive_below_strength} "
                    f"and unused for {self.parts.policy.archive_unused_days:g}+ days"
                )
                if dry_run:
                    archived.append(record)
                    continue
                try:
                    archived.append(
                        self.lifecycle.set_status(
                            record, Status.ARCHIVED, ChangeOperation.DECAY, actor, reason
                        )
                    )
                except ConcurrentModification:
                    continue  # touched meanwhile: no longer a candidate this run
            if not page.next_cursor:
                break
            cursor = page.next_cursor
        return DecayReport(archived=archived, examined=examined, dry_run=dry_run)

    def reindex(self, tenant: str, namespace: str | None = None, batch: int = 64) -> int:
        """Rebuild the tenant's search entries from the record store (the source of truth), e.g. after an
        index write failed or the embedder changed."""
        self.parts.ensure_tenant(tenant)
        count = 0
        cursor: str | None = None
        while True:
            page = self.parts.store.list(
                tenant,
                RecordQuery(namespaces=(namespace,) if namespace else (), limit=batch, cursor=cursor),
            )
            indexable = [r for r in page.items if r.status is not Status.QUARANTINED]
            if indexable:
                vectors = self.parts.embed(tenant, [r.content for r in indexable])
                entries = [entry(r, v) for r, v in zip(indexable, vectors, strict=True)]
                self.parts.index.upsert(tenant, vectors[0].identity, entries)
                count += len(indexable)
            if not page.next_cursor:
                return count
            cursor = page.next_cursor
