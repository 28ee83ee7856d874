"""Compaction: merge clusters of near-duplicate records of a namespace into one summary record (weekly, from
the dreaming sweep, or on demand).

Near-duplicates say the same thing, so the summary of a cluster is its most informative member — the one with
the most concepts, then the highest score, then the most recent — and the others are folded into it:

- the summary record keeps its content and id (its recall history stays), takes the highest score of the
  cluster and records `compacted_from` (up to 10 member ids) and `compacted_count` in its metadata;
- every other member gets `compacted_into=<summary id>` in its metadata and is archived with the reason
  "compacted into …" (never deleted: `restore` brings it back).

Only active records of the same type cluster, at `similarity` (default: the embedder's near-duplicate
threshold, the one the write discipline merges at), found without comparing all pairs
(`near_duplicates.py`). A record written between the listing and the fold (a version conflict) is left for
the next run. Re-running finds nothing new: archived members are no longer active.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from ..errors import Conflict
from ..memory.near_duplicates import cluster, embedding_verifier, term_set
from ..memory.service import MemoryService
from ..ports import Clock, RecordQuery, RecordStore
from ..records import MemoryRecord, Status, metadata_size
from .extraction import concept_count

_PAGE = 200
_LINKED_IDS = 10


@dataclass
class CompactedCluster:
    summary_id: str
    member_ids: list[str]
    type: str
    content: str

    def as_dict(self) -> dict[str, Any]:
        return {
            "summary_id": self.summary_id,
            "archived": self.member_ids,
            "type": self.type,
            "content": self.content[:200],
        }


@dataclass
class CompactionReport:
    examined: int
    similarity: float
    dry_run: bool
    clusters: list[CompactedCluster] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "examined": self.examined,
            "similarity": self.similarity,
            "dry_run": self.dry_run,
            "clusters": [c.as_dict() for c in self.clusters],
            "skipped": self.skipped,
        }


class CompactionService:
    def __init__(self, memory: MemoryService, store: RecordStore, clock: Clock) -> None:
        self._memory = memory
        self._store = store
        self._clock = clock

    def compact(
        self,
        tenant: str,
        namespace: str,
        *,
        similarity: float | None = None,
        dry_run: bool = False,
        actor: str = "compaction",
    ) -> CompactionReport:
        threshold = similarity if similarity is not None else self._memory.thresholds.near_duplicate
        records = self._active_records(tenant, namespace)
        report = CompactionReport(examined=len(records), similarity=threshold, dry_run=dry_run)
        if len(records) < 2:
            return report
        texts = [record.content for record in records]
        verify = embedding_verifier(lambda indices: self._memory.embed_documents([texts[i] for i in indices]))
        roots, _ = cluster(
            [term_set(text) for text in texts],
            threshold=threshold,
            verify=verify,
            groups=[record.type.value for record in records],
        )
        members: dict[int, list[MemoryRecord]] = defaultdict(list)
        for index, root in enumerate(roots):
            members[root].append(records[index])
        for group in members.values():
            if len(group) < 2:
                continue
            summary = max(group, key=_informativeness)
            others = [record for record in group if record.id != summary.id]
            if dry_run:
                report.clusters.append(_describe(summary, others))
                continue
            try:
                self._fold(tenant, summary, others, actor, threshold)
            except Conflict as error:
                report.skipped.append(f"cluster of {summary.id}: {error.message}")
                continue
            report.clusters.append(_describe(summary, others))
        return report

    def _active_records(self, tenant: str, namespace: str) -> list[MemoryRecord]:
        records: list[MemoryRecord] = []
        cursor: str | None = None
        while True:
            page = self._store.list(
                tenant,
                RecordQuery(namespaces=(namespace,), statuses=(Status.ACTIVE,), limit=_PAGE, cursor=cursor),
            )
            records.extend(page.items)
            if not page.next_cursor:
                return records
            cursor = page.next_cursor

    def _fold(
        self, tenant: str, summary: MemoryRecord, others: list[MemoryRecord], actor: str, threshold: float
    ) -> None:
        links: dict[str, str | int] = {
            "compacted_from": ",".join(record.id for record in others[:_LINKED_IDS]),
            "compacted_count": len(others),
        }
        self._memory.update(
            tenant,
            summary.id,
            actor=actor,
            expected_version=summary.version,
            score=max(record.score for record in [summary, *others]),
            metadata=self._with(summary, links),
        )
        for record in others:
            updated = self._memory.update(
                tenant,
                record.id,
                actor=actor,
                expected_version=record.version,
                metadata=self._with(record, {"compacted_into": summary.id}),
            )
            self._memory.archive(
                tenant,
                updated.id,
                actor=actor,
                reason=f"compacted into {summary.id} (near-duplicate at similarity ≥ {threshold:g})",
            )

    def _with(self, record: MemoryRecord, extra: dict[str, str | int]) -> dict[str, str | int | float | bool]:
        """The record's metadata plus the links, unless that would break the metadata limits (the archive
        reason and the change log still hold the link then)."""
        merged = {**record.metadata, **extra}
        policy = self._memory.policy
        if len(merged) > policy.max_metadata_keys or metadata_size(merged) > policy.max_metadata_bytes:
            return dict(record.metadata)
        return merged


def _informativeness(record: MemoryRecord) -> tuple[float, float, str, str]:
    return (concept_count(term_set(record.content)), record.score, record.updated_at.isoformat(), record.id)


def _describe(summary: MemoryRecord, others: list[MemoryRecord]) -> CompactedCluster:
    return CompactedCluster(
        summary_id=summary.id,
        member_ids=[record.id for record in others],
        type=summary.type.value,
        content=summary.content,
    )
