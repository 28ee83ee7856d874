"""Dreaming's relevance signal is free of the fusion's settings (issue 34, seventh round): recall logs each
result's match strength (its keyword and vector evidence at equal weights, `recall.ScoredRecord.match`) beside its
ranked score, and the Deep phase averages the match strengths. Retuning the fusion (its weights, or RRF instead
of score fusion) reorders and rescores recalls but leaves every gate verdict where it was."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from dreaming_world import NS, TENANT, World
from hypothesis import given
from hypothesis import strategies as st

from agent_memory.domain.dreaming.light import attach_recalls
from agent_memory.domain.dreaming.scoring import Candidate
from agent_memory.domain.memory.policy import MemoryPolicy
from agent_memory.domain.memory.recall import reciprocal_rank_fusion, scaled_halves, score_fusion
from agent_memory.domain.memory.service import RecallInput
from agent_memory.domain.ports import Hit
from agent_memory.domain.records import MemoryType, RecallLogEntry
from tests.conftest import FixedClock

INVOICES = "Invoices are generated on the first day of each month by the billing cron job"
REMINDERS = "Customers receive a reminder email seven days before an invoice is due"
REFUNDS = "Refunds above 500 euros need approval from the finance lead"
LEDGER = "The billing service stores ledgers in PostgreSQL 16"
QUERIES = [
    "when are invoices generated",
    "invoice reminder email",
    "billing cron job day",
    "monthly invoice run",
    "refund approval",
]
RANKINGS = {
    "score fusion, vector weight 0.4": {"vector_weight": 0.4},
    "score fusion, vector weight 0.5": {"vector_weight": 0.5},
    "score fusion, vector weight 0.6": {"vector_weight": 0.6},
    "reciprocal-rank fusion": {"fusion": "rrf"},
}


def swept(root: Path, clock, **policy) -> tuple[World, dict[str, tuple[int, float, float, str, list[str]]]]:
    """Four records, five recalls of every record (k above the record count: each recall returns all four, so
    the recall history is the same under any ranking), then a dry-run sweep: per text its recall count,
    relevance signal, total, decision and failed gates."""
    world = World.build(root, clock, **policy)
    for text in (INVOICES, REMINDERS, REFUNDS, LEDGER):
        world.short_term(text)
    for query in QUERIES:
        world.clock.advance(days=1)
        results = world.memory.recall(TENANT, RecallInput(query=query, namespaces=(NS,), k=10)).results
        assert len(results) == 4
    report = world.dreaming().run(TENANT, NS, dry_run=True)
    return world, {
        outcome.candidate.text: (
            outcome.candidate.recall_count,
            outcome.signals.relevance,
            outcome.total,
            outcome.decision,
            [gate.name for gate in outcome.gates if not gate.passed],
        )
        for outcome in report.outcomes
    }


def logged(world: World, field: str) -> list[dict[str, float]]:
    """Per logged recall, the value `field` (scores, match_scores) recorded for each record, by its text."""
    entries = world.store.list_recalls(TENANT, NS, since=datetime(2000, 1, 1, tzinfo=UTC))
    text = {record.id: record.content for record in world.store.get_many(TENANT, entries[0].result_ids)}
    return [
        {
            text[record_id]: value
            for record_id, value in zip(entry.result_ids, getattr(entry, field), strict=True)
        }
        for entry in entries
    ]


def test_given_the_same_recalls_under_other_fusion_settings_then_every_gate_verdict_is_the_same(tmp_path):
    runs = {
        name: swept(tmp_path / str(index), FixedClock(), **policy)
        for index, (name, policy) in enumerate(RANKINGS.items())
    }

    (reference_world, reference), *others = runs.values()
    assert len(reference) == 4 and {count for count, *_ in reference.values()} == {5}
    for world, outcomes in others:
        assert outcomes == reference
        # what is recorded for each record is the same …
        assert logged(world, "match_scores") == logged(reference_world, "match_scores")
    # … while each setting gave other recall scores, the ones the caller sees (what dreaming read before)
    scores = [logged(world, "scores") for world, _ in runs.values()]
    assert all(a != b for index, a in enumerate(scores) for b in scores[index + 1 :])


def test_given_records_recalled_strongly_and_weakly_as_often_then_only_the_weak_are_stopped_by_min_score(
    tmp_path, clock
):
    """`min_score` 0.8 keeps its meaning (DESIGN §3): recalled strongly and often passes; recalled as often but
    only as a weak match (the recall returned it low, on little evidence) does not, on that gate alone."""
    _, outcomes = swept(tmp_path, clock)

    for text in (INVOICES, REMINDERS):
        count, _, total, decision, failed = outcomes[text]
        assert count == 5 and decision == "promoted" and total >= 0.8 and failed == []
    for text in (REFUNDS, LEDGER):
        count, _, total, decision, failed = outcomes[text]
        assert count == 5 and total < 0.8
        assert decision == "blocked" and failed == ["min_score"]
    strong = min(outcomes[text][1] for text in (INVOICES, REMINDERS))
    weak = max(outcomes[text][1] for text in (REFUNDS, LEDGER))
    assert strong > 1.5 * weak


def test_given_a_lone_vector_hit_then_its_match_is_its_keyword_evidence_under_any_weight():
    """The case that held vector_weight at 0.4: one record, so one vector hit, whose scaled cosine is 0 (its
    span is the noise floor). Its fused relevance falls as the vector weight rises; its match does not: a
    vector half of one hit does not grade the recall, the keyword half alone does."""
    vector, keyword = [Hit("only", 0.61)], [Hit("only", 7.5)]
    min_span = MemoryPolicy().vector_min_span

    relevances = {w: score_fusion(vector, keyword, 60, w, min_span)[0].relevance for w in (0.4, 0.5, 0.6)}
    matches = {w: score_fusion(vector, keyword, 60, w, min_span)[0].match for w in (0.4, 0.5, 0.6)}

    assert relevances == pytest.approx({0.4: 0.6, 0.5: 0.5, 0.6: 0.4})
    assert matches == {0.4: 1.0, 0.5: 1.0, 0.6: 1.0}
    assert reciprocal_rank_fusion(vector, keyword, 60, min_span)[0].match == 1.0


_ids = st.sampled_from([f"m{i}" for i in range(8)])
_vector = st.lists(st.tuples(_ids, st.floats(-1.0, 1.0)), max_size=8, unique_by=lambda hit: hit[0])
_keyword = st.lists(st.tuples(_ids, st.floats(0.01, 40.0)), max_size=8, unique_by=lambda hit: hit[0])


@given(_vector, _keyword, st.floats(0.0, 1.0), st.floats(0.0, 1.0), st.floats(0.0, 0.5))
def test_match_is_the_halves_at_equal_weights_whatever_the_weight_or_the_fusion(
    vector, keyword, w1, w2, min_span
):
    vector_hits = [Hit(record_id, score) for record_id, score in vector]
    keyword_hits = [Hit(record_id, score) for record_id, score in keyword]
    by_vector, by_keyword = scaled_halves(vector_hits, keyword_hits, min_span)

    def matches(fused) -> dict[str, float]:
        return {item.record_id: item.match for item in fused}

    first = matches(score_fusion(vector_hits, keyword_hits, 60, w1, min_span))
    assert first == matches(score_fusion(vector_hits, keyword_hits, 60, w2, min_span))
    assert first == matches(reciprocal_rank_fusion(vector_hits, keyword_hits, 60, min_span))
    graded = [half for half, grades in ((by_vector, len(vector) > 1), (by_keyword, bool(keyword))) if grades]
    for record_id, value in first.items():
        expected = sum(half.get(record_id, 0.0) for half in graded) / len(graded) if graded else 0.0
        assert value == pytest.approx(expected)
        assert 0.0 <= value <= 1.0 + 1e-12


def test_given_recalls_logged_before_and_after_match_strengths_then_each_counts_with_what_it_recorded():
    """A recall logged before this change has no match strengths: it counts with its recall score, and falls
    out of the window after recall_window_days."""
    at = datetime(2026, 11, 30, 12, tzinfo=UTC)
    candidate = Candidate(key="k", text=INVOICES, type=MemoryType.DOMAIN_KNOWLEDGE, kind="fact")
    candidate.record_ids = ["mem_a", "mem_b"]

    def entry(query: str, scores: list[float], match_scores: list[float] | None) -> RecallLogEntry:
        return RecallLogEntry(
            tenant=TENANT,
            namespace=NS,
            query_hash=query,
            result_ids=["mem_a", "mem_b"],
            scores=scores,
            match_scores=match_scores,
            at=at,
        )

    attach_recalls(
        [candidate],
        [entry("old", [0.55, 0.3], None), entry("new", [0.5, 0.2], [0.9, 1.0])],
    )

    assert candidate.recall_count == 2 and candidate.unique_queries == 2
    assert candidate.mean_recall_score == pytest.approx((0.55 + 1.0) / 2)
