"""Reading memory: hybrid recall (ranked, the newer of two linked memories first), get, list, history, the
change log and counts."""

from __future__ import annotations

import builtins
import hashlib
from collections.abc import Sequence
from datetime import datetime

from ..errors import TooLarge, ValidationFailed
from ..ports import Hit, IndexFilter, Page, RecordCounts, RecordQuery
from ..records import ChangeEntry, MemoryRecord, Status, normalize_content
from ..text import query_terms
from . import limits
from .focus import focus_for, hypothetical, named, people, speakers_of, without_names
from .inputs import RecallInput, RecallResult
from .parts import MemoryParts
from .process_cache import SpeakerDigests
from .query_vectors import QueryVectorCache
from .recall import (
    Fused,
    ScoredRecord,
    newer_first,
    recall_log_entries,
    reciprocal_rank_fusion,
    record_recall,
    score_fusion,
    search_halves,
    select_top,
)
from .reranking import chosen_reranker, rerank_top

MAX_QUERY_CHARS = 2000


class Recaller:
    def __init__(self, parts: MemoryParts) -> None:
        self.parts = parts
        ttl = parts.policy.process_cache_seconds
        self.query_vectors = QueryVectorCache(ttl_seconds=ttl)
        """A retried or re-cased query costs no second embedding (issue 34)."""
        self.speakers_seen = SpeakerDigests(ttl_seconds=ttl)
        """Speakers met in past recalls per tenant and namespaces, as keyed digests of their words: the vector
        half's first guess at who of a question's names is a person (process_cache.py has the bounds)."""

    def forget_cached(self, tenant: str, namespaces: Sequence[str] = ()) -> int:
        """Drop what recall keeps across requests for `tenant` (of `namespaces`, when given): a purge that
        ends in this process calls it."""
        return self.query_vectors.forget(tenant, namespaces) + self.speakers_seen.forget(tenant, namespaces)

    def recall(self, tenant: str, query: RecallInput) -> RecallResult:
        text, statuses = self._checked(query)
        now = self.parts.now()
        p = self.parts.policy
        reranker = chosen_reranker(query.rerank, self.parts.rerankers)
        # With a reranker, the hybrid ranking's top `rerank_depth` are its candidates: fetch and hydrate them all.
        depth = max(query.k, p.rerank_depth) if reranker else query.k
        where = IndexFilter(namespaces=query.namespaces, types=query.types, statuses=statuses)
        search = _Search(self, tenant, query, statuses, text, where, min(p.max_top_k, depth * p.over_fetch))
        # The question's names say who, which the focus below weighs; the vector half embeds what it asks
        # without the names of people (`focus.people`): who they are is known once the keyword half's top
        # hits are read, so the vector half starts from the speakers met before and asks again if that was wrong.
        names = (
            named(text) if p.focus_unnamed_vector or p.focus_off_subject < 1 or p.focus_no_self < 1 else None
        )
        guess = (
            people(text, self.speakers_seen.met(tenant, query.namespaces, names)) if names else frozenset()
        )
        unnamed = p.focus_unnamed_vector
        fused = search.fused(
            without_names(text, guess) if unnamed else text, roster=max(2 * depth, 16) if names else 0
        )
        persons = people(text, search.speakers) if names else frozenset()
        if search.speakers:
            self.speakers_seen.note(tenant, query.namespaces, search.speakers)
        if unnamed and persons != guess:
            fused = search.fused(without_names(text, persons))
        # The question's focus (issue 34): turns of speakers it does not name, for a "when" question memories
        # with no time, and for a question naming a date memories dated elsewhere keep a share of their relevance.
        focus = focus_for(text, p, people=persons)
        factor = focus.factor if focus.active else None
        threshold = query.min_score if query.min_score is not None else p.default_min_score
        ranked = select_top(fused, search.load, p, now, k=depth, threshold=threshold, focus=factor)
        outcome = None
        if reranker is not None:
            ranked, outcome = rerank_top(reranker, text, ranked, p.rerank_depth)
        results = newer_first(ranked[: query.k])
        query_hash = hashlib.sha256(normalize_content(text).encode()).hexdigest()
        if results:
            self._log_recall(tenant, text, query_hash, results, now)
        return RecallResult(results=results, query_hash=query_hash, rerank=outcome)

    def _checked(self, query: RecallInput) -> tuple[str, tuple[Status, ...]]:
        """The query text and the statuses to search, or the error naming what is wrong with the request."""
        text = query.query.strip()
        if not text:
            raise ValidationFailed("query must not be empty")
        if len(text) > MAX_QUERY_CHARS:
            raise TooLarge(f"query is {len(text)} characters; the limit is {MAX_QUERY_CHARS}")
        if not 1 <= query.k <= self.parts.policy.max_top_k:
            raise ValidationFailed(f"k must be between 1 and {self.parts.policy.max_top_k}; got {query.k}")
        if query.mode not in ("hybrid", "vector", "keyword"):
            raise ValidationFailed(f"mode must be hybrid, vector or keyword; got {query.mode!r}")
        for namespace in query.namespaces:
            limits.check_namespace(namespace)
        if not query.namespaces:
            raise ValidationFailed("name at least one namespace to recall from")
        statuses = tuple(query.statuses) or (
            (Status.ACTIVE, Status.SUPERSEDED, Status.ARCHIVED) if query.as_of else (Status.ACTIVE,)
        )
        if Status.QUARANTINED in statuses:
            raise ValidationFailed("quarantined memories are never recalled; list them instead")
        return text, statuses

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
        record_recall(self.parts.store, entries, tenant, ids, now, overlap=self.parts.overlap_halves)

    def get(self, tenant: str, record_id: str) -> MemoryRecord:
        return self.parts.get(tenant, record_id)

    def list(self, tenant: str, query: RecordQuery) -> Page[MemoryRecord]:
        for namespace in (*query.namespaces, *query.namespaces_below):
            limits.check_namespace(namespace)
        return self.parts.store.list(tenant, query)

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
            previous = self.parts.store.get(tenant, previous_id)
            if previous is None:
                break
            chain.insert(0, previous)
            seen.add(previous.id)
            cursor = previous
        cursor = record
        while (next_id := cursor.superseded_by) and next_id not in seen:
            following = self.parts.store.get(tenant, next_id)
            if following is None:
                break
            chain.append(following)
            seen.add(following.id)
            cursor = following
        changes: builtins.list[ChangeEntry] = []
        for member in chain:
            changes.extend(self._all_changes(tenant, member.id))
        changes.sort(key=lambda entry: (entry.at, entry.id))
        return chain, changes

    def _all_changes(self, tenant: str, record_id: str) -> builtins.list[ChangeEntry]:
        entries: builtins.list[ChangeEntry] = []
        cursor: str | None = None
        while True:
            page = self.parts.store.list_changes(tenant, record_id=record_id, limit=100, cursor=cursor)
            entries.extend(page.items)
            if not page.next_cursor:
                return entries
            cursor = page.next_cursor

    def changes(
        self, tenant: str, namespace: str, *, limit: int = 100, cursor: str | None = None
    ) -> Page[ChangeEntry]:
        limits.check_namespace(namespace)
        return self.parts.store.list_changes(tenant, namespace=namespace, limit=limit, cursor=cursor)

    def counts(self, tenant: str, namespace: str) -> RecordCounts:
        limits.check_namespace(namespace)
        return self.parts.store.counts(tenant, namespace)


class _Search:
    """The two halves of one recall, their fusion, and the records read for it (each read once). The keyword
    half reads the whole question and runs once; with it, the records of its top hits are read (beside the
    vector half, as the keyword half itself runs), and their speakers say who of the question's names are
    people. The vector half runs again only when its question changes (`Recaller.recall`)."""

    def __init__(
        self,
        recaller: Recaller,
        tenant: str,
        query: RecallInput,
        statuses: tuple[Status, ...],
        text: str,
        where: IndexFilter,
        fetch: int,
    ) -> None:
        self.recaller, self.tenant, self.query, self.statuses = recaller, tenant, query, statuses
        self.text, self.where, self.fetch = text, where, fetch
        self.keyword_hits: list[Hit] | None = None
        self.speakers: frozenset[str] = frozenset()
        """The words of the speaker labels among the keyword half's top hits."""
        self.loaded: dict[str, MemoryRecord | None] = {}

    def load(self, ids: list[str]) -> dict[str, MemoryRecord]:
        """The records of `ids` that pass the recall's filters, each read from the store once per recall."""
        missing = [each for each in ids if each not in self.loaded]
        if missing:
            recaller = self.recaller
            found = {
                record.id: record
                for record in recaller.parts.store.get_many(self.tenant, missing)
                if recaller._matches(record, self.query, self.statuses)
            }
            self.loaded.update({each: found.get(each) for each in missing})
        return {each: record for each in ids if (record := self.loaded[each]) is not None}

    def fused(self, vector_text: str, roster: int = 0) -> list[Fused]:
        """The fused halves with the vector half asking `vector_text`; the first call also reads the records
        of the keyword half's top `roster` hits for their speakers."""
        parts, tenant, mode = self.recaller.parts, self.tenant, self.query.mode

        def vector_half() -> list[Hit]:
            parts.ensure_tenant(tenant)
            embedder = parts.embedder_of(tenant)
            vector = self.recaller.query_vectors.embed(tenant, embedder, vector_text, self.query.namespaces)
            return parts.index.query_vector(tenant, embedder.identity, vector, k=self.fetch, where=self.where)

        def keyword_half() -> list[Hit]:
            hits = parts.index.query_keyword(tenant, self.text, k=self.fetch, where=self.where)
            if roster:
                self.speakers = speakers_of(self.load([hit.record_id for hit in hits[:roster]]).values())
            return hits

        if self.keyword_hits is None:
            vector_hits, self.keyword_hits = search_halves(
                vector_half if mode in ("hybrid", "vector") else None,
                keyword_half if mode in ("hybrid", "keyword") else None,
                overlap=parts.overlap_halves,
            )
        else:
            vector_hits = vector_half() if mode in ("hybrid", "vector") else []
        p = parts.policy
        weight = p.vector_weight
        if p.hypothetical_vector_weight is not None and hypothetical(self.text):
            weight = p.hypothetical_vector_weight
        if p.fusion == "score":
            return score_fusion(vector_hits, self.keyword_hits, p.rrf_k, weight, p.vector_min_span)
        return reciprocal_rank_fusion(vector_hits, self.keyword_hits, p.rrf_k, p.vector_min_span)
