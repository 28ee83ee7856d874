"""Hybrid recall ranking: reciprocal-rank fusion of vector and keyword ranks, then a weighted re-rank.

Kept free of I/O so the ranking can be unit-tested and explained: every result carries its components."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from ..ports import Hit
from ..records import MemoryRecord
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


@dataclass(slots=True)
class _FusionRow:
    """One record's running fusion state while the two ranked lists are merged."""

    rrf: float = 0.0
    vector_rank: int | None = None
    keyword_rank: int | None = None
    similarity: float | None = None
    keyword_score: float | None = None


def reciprocal_rank_fusion(vector_hits: Sequence[Hit], keyword_hits: Sequence[Hit], k: int) -> list[Fused]:
    """score(d) = Σ 1 / (k + rank_i(d)) over the lists d appears in (ranks start at 1).

    RRF needs no score calibration between cosine similarity and BM25, which live on different scales."""
    table: dict[str, _FusionRow] = {}
    for rank, hit in enumerate(vector_hits, start=1):
        row = table.setdefault(hit.record_id, _FusionRow())
        row.rrf += 1.0 / (k + rank)
        row.vector_rank, row.similarity = rank, hit.score
    for rank, hit in enumerate(keyword_hits, start=1):
        row = table.setdefault(hit.record_id, _FusionRow())
        row.rrf += 1.0 / (k + rank)
        row.keyword_rank, row.keyword_score = rank, hit.score
    fused = [
        Fused(
            record_id=record_id,
            rrf=row.rrf,
            vector_rank=row.vector_rank,
            keyword_rank=row.keyword_rank,
            similarity=row.similarity,
            keyword_score=row.keyword_score,
        )
        for record_id, row in table.items()
    ]
    fused.sort(key=lambda f: (-f.rrf, f.record_id))
    return fused


@dataclass(frozen=True)
class ScoredRecord:
    record: MemoryRecord
    score: float
    relevance: float
    recency: float
    importance: float
    strength: float
    fused: Fused


def rerank(
    fused: Sequence[Fused], records: dict[str, MemoryRecord], policy: MemoryPolicy, now: datetime
) -> list[ScoredRecord]:
    """Combine relevance (RRF normalised to [0, 1] by the best possible value, rank 1 in both lists),
    recency (half-life decay since the record was last written), importance (the record's score) and
    strength, with the policy's weights normalised to sum to 1."""
    weights = policy.weights
    total = weights.relevance + weights.recency + weights.importance + weights.strength
    best_possible = 2.0 / (policy.rrf_k + 1)
    scored: list[ScoredRecord] = []
    for item in fused:
        record = records.get(item.record_id)
        if record is None:
            continue
        relevance = min(1.0, item.rrf / best_possible)
        recency = decay(hours_between(record.updated_at, now), policy.recency_half_life_hours)
        importance = record.score
        current_strength = strength(record, now)
        score = (
            weights.relevance * relevance
            + weights.recency * recency
            + weights.importance * importance
            + weights.strength * current_strength
        ) / total
        scored.append(
            ScoredRecord(
                record=record,
                score=score,
                relevance=relevance,
                recency=recency,
                importance=importance,
                strength=current_strength,
                fused=item,
            )
        )
    scored.sort(key=lambda s: (-s.score, -s.relevance, s.record.id))
    return scored
