"""Hybrid recall ranking: reciprocal-rank fusion of vector and keyword ranks, then a weighted re-rank.

The ranking is kept free of I/O so it can be unit-tested and explained: every result carries its components.
`search_halves`, `together` and `record_recall` only schedule calls the service hands them (ports)."""

from __future__ import annotations

import contextvars
import functools
import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime

from ..ports import Hit, RecordStore
from ..records import MemoryRecord, RecallLogEntry
from .policy import MemoryPolicy
from .strength import decay, hours_between, strength


@dataclass(frozen=True)
class Fused:
    record_id: str
    rrf: float
    vector_rank: int | None
    keyword_rank: int | None
    similarity: float | None
    keyword_score: float | None
    relevance: float | None = None
    """Score fusion's relevance in [0, 1] (None: RRF's, normalised in `rerank`)."""
    match: float = 0.0
    """How strongly the record matched, free of the fusion's mode and weights: the mean of its evidence in the
    halves that grade this recall (`match_shares`), in [0, 1]. Scaled by the question's focus, it is what
    the recall log records for dreaming's relevance signal (`recall_log_entries`), so the fusion can be retuned
    without changing what dreaming promotes."""


@dataclass(slots=True)
class _FusionRow:
    """One record's running fusion state while the two ranked lists are merged."""

    rrf: float = 0.0
    vector_rank: int | None = None
    keyword_rank: int | None = None
    similarity: float | None = None
    keyword_score: float | None = None


def reciprocal_rank_fusion(
    vector_hits: Sequence[Hit], keyword_hits: Sequence[Hit], k: int, min_span: float = 0.0
) -> list[Fused]:
    """score(d) = Σ 1 / (k + rank_i(d)) over the lists d appears in (ranks start at 1).

    RRF needs no score calibration between cosine similarity and BM25, which live on different scales. Each
    record's `match` is the same as under score fusion (`min_span`: MemoryPolicy.vector_min_span)."""
    vector, keyword = scaled_halves(vector_hits, keyword_hits, min_span)
    by_vector, by_keyword = match_shares(vector_hits, keyword_hits)
    fused = [
        _fused(
            record_id,
            row,
            match=by_vector * vector.get(record_id, 0.0) + by_keyword * keyword.get(record_id, 0.0),
        )
        for record_id, row in _rrf_table(vector_hits, keyword_hits, k).items()
    ]
    fused.sort(key=lambda f: (-f.rrf, f.record_id))
    return fused


def _scaled(hits: Sequence[Hit], floor_at_min: bool, min_span: float = 0.0) -> dict[str, float]:
    """Each hit's score scaled into [0, 1] by the list's best (and, with `floor_at_min`, its worst) score, over a
    span of at least `min_span`; a list whose scores are all equal and no floor: 1 each."""
    if not hits:
        return {}
    high = max(hit.score for hit in hits)
    low = min(hit.score for hit in hits) if floor_at_min else 0.0
    span = max(high - low, min_span)
    return {hit.record_id: (hit.score - low) / span if span > 0 else 1.0 for hit in hits}


def scaled_halves(
    vector_hits: Sequence[Hit], keyword_hits: Sequence[Hit], min_span: float
) -> tuple[dict[str, float], dict[str, float]]:
    """(vector, keyword) evidence per record in [0, 1]: the cosine min-max scaled over the vector hits (span
    ≥ `min_span`), BM25 over the best BM25."""
    return _scaled(vector_hits, True, min_span), _scaled(keyword_hits, False)


def match_shares(vector_hits: Sequence[Hit], keyword_hits: Sequence[Hit]) -> tuple[float, float]:
    """(vector share, keyword share) of `Fused.match` = vector share × vector evidence + keyword share × keyword
    evidence (`scaled_halves`; 0 where a half did not find the record): the mean over the halves that grade this
    recall, with equal weight whatever the fusion's: the keyword half when it found anything, the vector half
    when it has two hits or more (min-max scaling of a single hit has nothing to scale against: its 0 says
    nothing). No half grading: (0, 0).

    Equal weights, not the better half: on LoCoMo dev the mean, scaled by the question's focus, tells the
    evidence turns among returned hits from the others as well as the ranked score (AUC 0.833, the score at
    `vector_weight` 0.4 0.829) and averages 0.459 per hit against that score's 0.487, on which `min_score` was
    set; the better half averages 0.742 with AUC 0.694 (bench/dreaming_relevance.py)."""
    grades = (len(vector_hits) > 1, bool(keyword_hits))
    share = 1.0 / sum(grades) if any(grades) else 0.0
    return (share if grades[0] else 0.0), (share if grades[1] else 0.0)


def _rrf_table(vector_hits: Sequence[Hit], keyword_hits: Sequence[Hit], k: int) -> dict[str, _FusionRow]:
    table: dict[str, _FusionRow] = {}
    for rank, hit in enumerate(vector_hits, start=1):
        row = table.setdefault(hit.record_id, _FusionRow())
        row.rrf += 1.0 / (k + rank)
        row.vector_rank, row.similarity = rank, hit.score
    for rank, hit in enumerate(keyword_hits, start=1):
        row = table.setdefault(hit.record_id, _FusionRow())
        row.rrf += 1.0 / (k + rank)
        row.keyword_rank, row.keyword_score = rank, hit.score
    return table


def _fused(record_id: str, row: _FusionRow, relevance: float | None = None, *, match: float) -> Fused:
    return Fused(
        record_id=record_id,
        rrf=row.rrf,
        vector_rank=row.vector_rank,
        keyword_rank=row.keyword_rank,
        similarity=row.similarity,
        keyword_score=row.keyword_score,
        relevance=relevance,
        match=match,
    )


def score_fusion(
    vector_hits: Sequence[Hit],
    keyword_hits: Sequence[Hit],
    k: int,
    vector_weight: float,
    min_span: float = 0.0,
) -> list[Fused]:
    """relevance(d) = w · (cos(d) − cos_min) / max(cos_max − cos_min, min_span) + (1 − w) · bm25(d) / bm25_max
    over the fetched lists (a record absent from a list gets 0 from it); RRF is kept for explanation only.
    `min_span` keeps a flat vector list (every cosine within noise of the others) from being stretched to
    [0, 1] as if its first hit were a clear match (MemoryPolicy.vector_min_span). Each record's `match`
    (`match_shares`) is the halves' evidence at equal weights, which `vector_weight` does not move.

    Unlike RRF, it keeps how far ahead the best matches are: a turn that matches the question's rare words
    strongly is not pulled level with one that ranks first in the other list by a hair. On LoCoMo (both dev
    conversations) it beats RRF in every category (bench/retrieval_quality.py; docs/architecture.md)."""
    table = _rrf_table(vector_hits, keyword_hits, k)
    vector, keyword = scaled_halves(vector_hits, keyword_hits, min_span)
    share_v, share_k = match_shares(vector_hits, keyword_hits)
    # One Fused per record, built once (building RRF's list first and copying it cost ~0.5 ms per recall)
    scored: list[Fused] = []
    for record_id, row in table.items():
        by_vector, by_keyword = vector.get(record_id, 0.0), keyword.get(record_id, 0.0)
        relevance = vector_weight * by_vector + (1.0 - vector_weight) * by_keyword
        scored.append(_fused(record_id, row, relevance, match=share_v * by_vector + share_k * by_keyword))
    scored.sort(key=lambda f: (-(f.relevance or 0.0), -f.rrf, f.record_id))
    return scored


@dataclass(frozen=True)
class ScoredRecord:
    record: MemoryRecord
    score: float
    relevance: float
    recency: float
    importance: float
    strength: float
    fused: Fused
    focus: float = 1.0
    """The question's focus factor applied to relevance (`rerank`), in [0, 1]."""

    @property
    def match(self) -> float:
        """What the recall log records for dreaming: the fusion-free `Fused.match` scaled by the focus (who,
        when and which date the question is about), without the priors."""
        return self.fused.match * self.focus


def prior_share(policy: MemoryPolicy) -> float:
    """δ: the share of the score the priors (recency, importance, strength) control, their share of the weights
    scaled by `policy.prior_influence` (0 when every weight is on relevance)."""
    weights = policy.weights
    total = weights.relevance + weights.recency + weights.importance + weights.strength
    return policy.prior_influence * (total - weights.relevance) / total


def relevance_first(relevance: float, prior: float, delta: float) -> float:
    """score = relevance · (1 - δ + δ · prior), relevance and prior in [0, 1], δ ≤ 0.5.

    Relevance first by construction: the priors scale a record's relevance by a factor in [1 - δ, 1], so a
    record with relevance 0 scores 0, and a record whose relevance is ≥ 1 / (1 - δ) times another's scores at
    least as much as the other whatever the priors (rel_a (1 - δ) ≥ rel_b ≥ score_b)."""
    return relevance * (1.0 - delta + delta * prior)


def rerank(
    fused: Sequence[Fused],
    records: dict[str, MemoryRecord],
    policy: MemoryPolicy,
    now: datetime,
    focus: Callable[[MemoryRecord], float] | None = None,
) -> list[ScoredRecord]:
    """Relevance (RRF normalised to [0, 1] by the best possible value, rank 1 in both lists) scaled by the
    prior, the weighted mean of recency (half-life decay since the record was last written), importance (the
    record's score) and strength, through `relevance_first`: the priors reorder only records of nearly equal
    relevance and never lift an irrelevant record over a relevant one. `focus` (domain/memory/focus.py) scales a
    record's relevance by a factor in [0, 1] first: who and what the question is about."""
    weights = policy.weights
    prior_total = weights.recency + weights.importance + weights.strength
    delta = prior_share(policy)
    best_possible = 2.0 / (policy.rrf_k + 1)
    scored: list[ScoredRecord] = []
    for item in fused:
        record = records.get(item.record_id)
        if record is None:
            continue
        relevance = item.relevance if item.relevance is not None else min(1.0, item.rrf / best_possible)
        factor = focus(record) if focus is not None else 1.0
        relevance *= factor
        recency = decay(hours_between(record.updated_at, now), policy.recency_half_life_hours)
        importance = record.score
        current_strength = strength(record, now)
        prior = (
            (
                weights.recency * recency
                + weights.importance * importance
                + weights.strength * current_strength
            )
            / prior_total
            if prior_total > 0
            else 0.0
        )
        scored.append(
            ScoredRecord(
                record=record,
                score=relevance_first(relevance, prior, delta),
                relevance=relevance,
                recency=recency,
                importance=importance,
                strength=current_strength,
                fused=item,
                focus=factor,
            )
        )
    scored.sort(key=lambda s: (-s.score, -s.relevance, s.record.id))
    return scored


def _relevance_of(item: Fused, policy: MemoryPolicy) -> float:
    """A candidate's relevance before its record is read: score fusion's, or RRF's normalised."""
    return item.relevance if item.relevance is not None else min(1.0, item.rrf / (2.0 / (policy.rrf_k + 1)))


def _by_relevance(fused: Sequence[Fused], policy: MemoryPolicy) -> list[Fused]:
    return sorted(fused, key=lambda item: (-_relevance_of(item, policy), -item.rrf, item.record_id))


def select_top(
    fused: Sequence[Fused],
    load: Callable[[list[str]], dict[str, MemoryRecord]],
    policy: MemoryPolicy,
    now: datetime,
    *,
    k: int,
    threshold: float,
    focus: Callable[[MemoryRecord], float] | None = None,
) -> list[ScoredRecord]:
    """The `k` best of `rerank(fused, records)` with scores ≥ `threshold`, hydrating (`load`: ids → the
    records that pass the recall filters) only as many candidates as can still reach the top k.

    Exact, not approximate: a record's score never exceeds its relevance (`relevance_first`: the factor is
    ≤ 1), so once k records are scored and the k-th score beats the relevance of every candidate not yet
    loaded, none of those can enter the top k (nor pass a threshold above its relevance). Candidates are
    visited in relevance order, in batches. At fetch depth 100 this loads ~20-40 records instead of ~180:
    hydration (reading and validating each stored record) was the largest part of a recall at 10k records.
    `focus` (a factor ≤ 1 per record, see `rerank`) keeps the bound exact: it can only lower a score."""
    ordered = _by_relevance(fused, policy)
    kept: list[ScoredRecord] = []
    start, batch = 0, max(2 * k, 16)
    while start < len(ordered):
        ceiling = _relevance_of(ordered[start], policy)
        if ceiling < threshold:
            break
        if len(kept) >= k and kept[k - 1].score > ceiling:
            break
        chunk = ordered[start : start + batch]
        start += len(chunk)
        batch = max(k, 8)
        records = load([item.record_id for item in chunk])
        kept.extend(item for item in rerank(chunk, records, policy, now, focus) if item.score >= threshold)
        kept.sort(key=lambda s: (-s.score, -s.relevance, s.record.id))
    return kept[:k]


def newer_first(results: list[ScoredRecord]) -> list[ScoredRecord]:
    """Of two memories linked as "possibly supersedes" (write discipline, issue 27), the newer ranks first: when
    both are in the results and the older scored higher, the newer moves to just above it. The older one stays
    (it may still be true) and carries `possibly_superseded_by`, which marks it."""
    ordered = list(results)
    position = {item.record.id: index for index, item in enumerate(ordered)}
    for item in list(ordered):
        newer_id = item.record.possibly_superseded_by
        if newer_id is None or newer_id not in position:
            continue
        older_at, newer_at = position[item.record.id], position[newer_id]
        if newer_at > older_at:
            newer = ordered.pop(newer_at)
            ordered.insert(older_at, newer)
            position = {entry.record.id: index for index, entry in enumerate(ordered)}
    return ordered


_pool_lock = threading.Lock()
_pool: tuple[int, ThreadPoolExecutor] | None = None


def _keyword_pool() -> ThreadPoolExecutor:
    """One small pool per process (a pool inherited through fork has no threads behind it)."""
    global _pool
    with _pool_lock:
        if _pool is None or _pool[0] != os.getpid():
            _pool = (os.getpid(), ThreadPoolExecutor(max_workers=4, thread_name_prefix="recall-keyword"))
        return _pool[1]


def search_halves(
    vector_half: Callable[[], list[Hit]] | None,
    keyword_half: Callable[[], list[Hit]] | None,
    *,
    overlap: bool = False,
) -> tuple[list[Hit], list[Hit]]:
    """(vector hits, keyword hits). With `overlap`, in hybrid mode, the keyword half runs on a worker thread
    while this thread embeds the query and searches the vectors: the two are independent, and in AWS both wait
    on the network (Bedrock for the embedding, S3 Vectors for the keyword half), so the keyword half's time
    comes off recall's latency. An error in either half is raised after both have finished."""
    if not overlap or vector_half is None or keyword_half is None:
        return (vector_half() if vector_half else []), (keyword_half() if keyword_half else [])
    keyword = _keyword_pool().submit(contextvars.copy_context().run, keyword_half)
    try:
        vector_hits = vector_half()
    except BaseException:
        keyword.exception()  # wait for it, so no work outlives the request; its own error is secondary
        raise
    return vector_hits, keyword.result()


def together(calls: Sequence[Callable[[], None]], *, overlap: bool) -> None:
    """Run independent calls, at once on worker threads when `overlap` (their time is network waits, as in
    AWS), one after the other otherwise. Every call finishes before this returns; the first error is raised."""
    if not overlap or len(calls) < 2:
        for each in calls:
            each()
        return
    futures = [_keyword_pool().submit(contextvars.copy_context().run, each) for each in calls[1:]]
    try:
        calls[0]()
    finally:
        errors = [future.exception() for future in futures]  # waits for all: no work outlives the request
    for error in errors:
        if error is not None:
            raise error


def record_recall(
    store: RecordStore,
    entries: Sequence[RecallLogEntry],
    tenant: str,
    record_ids: list[str],
    at: datetime,
    *,
    overlap: bool,
) -> None:
    """Write the recall-log entries and touch the returned records: independent writes, so where each is a
    network round trip (a DynamoDB call in AWS) they go out together instead of one after the other."""
    calls = [functools.partial(store.log_recall, entry) for entry in entries]
    together([*calls, functools.partial(store.touch, tenant, record_ids, at)], overlap=overlap)


def recall_log_entries(
    tenant: str, terms: list[str], query_hash: str, results: Sequence[ScoredRecord], at: datetime
) -> list[RecallLogEntry]:
    """One recall-log entry per namespace the results came from (dreaming reads them per namespace): each
    result's score as ranked, and its match (`ScoredRecord.match`: free of the fusion's mode and weights and of
    the priors), which dreaming's relevance signal averages (its `min_score` verdicts must not move when the
    fusion is retuned)."""
    by_namespace: dict[str, list[ScoredRecord]] = {}
    for item in results:
        by_namespace.setdefault(item.record.namespace, []).append(item)
    return [
        RecallLogEntry(
            tenant=tenant,
            namespace=namespace,
            query_hash=query_hash,
            query_terms=terms,
            result_ids=[item.record.id for item in items],
            scores=[round(item.score, 6) for item in items],
            match_scores=[round(item.match, 6) for item in items],
            at=at,
        )
        for namespace, items in by_namespace.items()
    ]
