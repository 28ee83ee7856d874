"""Deep scoring, REM reinforcement and workload feedback against hand-computed values (DESIGN §3).

The expected numbers below were worked out by hand from the documented formulas, e.g. for the reference
candidate (4 recalls scoring 0.7 on average, 3 distinct queries on 3 days, 1 daily-log mention the day before,
newest evidence 2 days old, 5 concepts):

    frequency     = ln(1 + 4 + 1) / ln 11              = 1.791759 / 2.397895 = 0.747222
    relevance     = 2.8 / 4                                                   = 0.7
    diversity     = max(3, 3) / 5                                             = 0.6
    recency       = exp(−ln 2 · 2 / 14) = 2^(−1/7)                            = 0.905724
    consolidation = (4 days − 1) / (3 − 1) = 1.5 → clamped                    = 1.0
    conceptual    = 5 / 6                                                     = 0.833333
    base = 0.24·0.747222 + 0.30·0.7 + 0.15·0.6 + 0.15·0.905724 + 0.10·1 + 0.06·0.833333 = 0.765192
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from pydantic import ValidationError

from agent_memory.domain.dreaming.config import DeepGates, DeepWeights, DreamingConfig
from agent_memory.domain.dreaming.extraction import concept_count
from agent_memory.domain.dreaming.scoring import Candidate, Workload, rem_reinforcement, score_candidates
from agent_memory.domain.memory.near_duplicates import term_set
from agent_memory.domain.records import MemoryType, content_hash

AS_OF = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
COLD = Workload(recalls=0, counts={}, cold_start=True)


def day(offset: int) -> str:
    return (AS_OF.date() - timedelta(days=offset)).isoformat()


def candidate(text: str, **fields) -> Candidate:
    base = {
        "key": content_hash(text),
        "text": text,
        "type": MemoryType.DOMAIN_KNOWLEDGE,
        "kind": "fact",
        "first_seen": AS_OF - timedelta(days=5),
        "last_seen": AS_OF - timedelta(days=2),
        "terms": term_set(text),
    }
    base.update(fields)
    return Candidate(**base)


def reference() -> Candidate:
    return candidate(
        "Invoices generated monthly billing cron",
        recall_count=4,
        score_sum=2.8,
        query_hashes={"q1", "q2", "q3"},
        recall_days={day(3), day(2), day(1)},
        mention_ids={"memory/2026-11-26.md#L3-L3"},
        mention_days={day(4)},
    )


def test_given_reference_candidate_when_scored_then_each_signal_matches_the_hand_computation():
    (outcome,) = score_candidates([reference()], [0.0], COLD, DreamingConfig(salience_bonus=0.0), AS_OF)

    signals = outcome.signals
    assert signals.frequency == pytest.approx(0.747222, abs=1e-6)
    assert signals.relevance == pytest.approx(0.7)
    assert signals.diversity == pytest.approx(0.6)
    assert signals.recency == pytest.approx(0.905724, abs=1e-6)
    assert signals.consolidation == pytest.approx(1.0)
    assert signals.conceptual == pytest.approx(0.833333, abs=1e-6)
    assert outcome.base == pytest.approx(0.765192, abs=1e-6)
    assert outcome.total == pytest.approx(0.765192, abs=1e-6)
    assert outcome.age_days == pytest.approx(5.0)


def test_given_rem_and_workload_values_when_scored_then_they_add_bounded_bonuses():
    # 0.765192 + 0.05 × 0.5 + 0.05 × 0.5 = 0.815192
    hot = Workload(recalls=30, counts={"invoices": 10, "cron": 5}, cold_start=False)  # cron: 5/10 = 0.5
    cand = candidate("monthly cron schedule details explained", **_evidence(reference()))

    (outcome,) = score_candidates([cand], [0.5], hot, DreamingConfig(salience_bonus=0.0), AS_OF)

    assert outcome.reinforcement == 0.5
    assert outcome.workload == pytest.approx(0.5)
    assert outcome.total == pytest.approx(outcome.base + 0.05, abs=1e-9)
    capped = score_candidates([cand], [1.0], hot, DreamingConfig(rem_bonus=1.0), AS_OF)[0]
    assert capped.total == 1.0  # never above 1


def _evidence(source: Candidate) -> dict:
    return {
        "recall_count": source.recall_count,
        "score_sum": source.score_sum,
        "query_hashes": set(source.query_hashes),
        "recall_days": set(source.recall_days),
        "mention_ids": set(source.mention_ids),
        "mention_days": set(source.mention_days),
    }


def test_given_unrecalled_chinese_note_when_scored_then_only_frequency_recency_and_concepts_count():
    # 账单服务迁移 → bigrams 账单 单服 服务 务迁 迁移 = 5 × ½ = 2.5 concepts
    # frequency ln 2 / ln 11 = 0.289065; recency 1 (seen now); conceptual 2.5/6 = 0.416667
    # base = 0.24·0.289065 + 0.15·1 + 0.06·0.416667 = 0.244376
    note = candidate(
        "账单服务迁移",
        mention_ids={"memory/2026-11-30.md#L3-L3"},
        mention_days={day(0)},
        first_seen=AS_OF,
        last_seen=AS_OF,
    )

    (outcome,) = score_candidates([note], [0.0], COLD, DreamingConfig(), AS_OF)

    assert concept_count(note.terms) == 2.5
    assert outcome.signals.frequency == pytest.approx(0.289065, abs=1e-6)
    assert outcome.signals.relevance == 0.0 and outcome.signals.diversity == 0.0
    assert outcome.signals.consolidation == 0.0  # one day only
    assert outcome.base == pytest.approx(0.244376, abs=1e-6)


def test_given_reference_candidate_when_each_gate_threshold_is_raised_alone_then_only_that_gate_fails():
    relaxed = DeepGates(
        min_score=0.7, min_recall_count=4, min_unique_queries=3, max_age_days=5, min_salience=0.4
    )
    plain = DreamingConfig(gates=relaxed, salience_bonus=0.0)
    (passing,) = score_candidates([reference()], [0.0], COLD, plain, AS_OF)
    assert passing.gates_passed and passing.route == "recall"
    assert passing.salience.value == pytest.approx(0.40625)  # 5/8 concepts × 0.25 + "monthly" 0.25

    variants = {
        "min_score": relaxed.model_copy(update={"min_score": 0.77}),
        "min_recall_count": relaxed.model_copy(update={"min_recall_count": 5}),
        "min_unique_queries": relaxed.model_copy(update={"min_unique_queries": 4}),
        "max_age_days": relaxed.model_copy(update={"max_age_days": 4.9}),
        "min_salience": relaxed.model_copy(update={"min_salience": 0.41}),
    }
    for gate, gates in variants.items():
        config = DreamingConfig(gates=gates, salience_bonus=0.0)
        (outcome,) = score_candidates([reference()], [0.0], COLD, config, AS_OF)
        failed = [result.name for result in outcome.gates if not result.passed]
        assert failed == [gate], gate


def test_given_weights_summing_over_one_when_configured_then_refused_with_the_sum():
    with pytest.raises(ValidationError, match=r"sum to 1\.1"):
        DeepWeights(frequency=0.34)
    assert DreamingConfig().weights.frequency == 0.24
    assert DreamingConfig().gates == DeepGates(
        min_score=0.8, min_recall_count=3, min_unique_queries=3, max_age_days=30
    )


def test_given_terms_recurring_on_separate_days_when_rem_runs_then_themes_and_reinforcement_match_by_hand():
    # Window: the 7 days ending 2026-11-30. Items: 2 recalls + 5 in-window candidates = 7 (max share 0.5 → 3.5).
    # postgres: recall 11-27, c1 11-28, c2 11-29 → 3 items, 3 days → strength 3/7
    # ledger:   recall 11-26, c1 11-28, c3 11-30 → 3 items, 3 days → strength 3/7
    # frontend: c4, c5 on 11-30 → 2 items, 1 day → not a theme; migration/export/...: 1 item
    # c1 = (3/7 + 3/7 + 0) / 3 = 2/7; c2 = c3 = (3/7) / 3 = 1/7; c4 = 0; c6 (outside the window) = 2/7
    c1 = candidate("postgres ledger migration", mention_days={day(2)})
    c2 = candidate("postgres backup schedule", mention_days={day(1)})
    c3 = candidate("ledger export format", mention_days={day(0)})
    c4 = candidate("frontend colour theme", mention_days={day(0)})
    c5 = candidate("frontend colour palette", mention_days={day(0)})
    c6 = candidate("postgres ledger", mention_days={day(29)})

    rem = rem_reinforcement(
        [c1, c2, c3, c4, c5, c6],
        recall_term_days={"postgres": {day(3)}, "ledger": {day(4)}},
        recall_term_items={"postgres": 1, "ledger": 1},
        recalls=2,
        config=DreamingConfig(),
        as_of=AS_OF,
    )

    assert rem.reinforcement == pytest.approx([2 / 7, 1 / 7, 1 / 7, 0.0, 0.0, 2 / 7])
    assert {theme["term"]: theme["strength"] for theme in rem.themes} == {
        "ledger": pytest.approx(0.4286, abs=1e-4),
        "postgres": pytest.approx(0.4286, abs=1e-4),
    }


def test_given_a_term_in_most_items_when_rem_runs_then_it_is_not_a_theme():
    many = [candidate(f"deploy step{i} pipeline", mention_days={day(i % 3)}) for i in range(6)]
    rem = rem_reinforcement(many, {}, {}, 0, DreamingConfig(), AS_OF)
    assert "deploy" not in {theme["term"] for theme in rem.themes}  # in 6/6 items > rem_max_share
    assert rem.reinforcement == [0.0] * 6


def test_given_query_topics_when_workload_is_read_then_hottest_topic_scales_and_cold_start_is_zero():
    warm = Workload(recalls=25, counts={"invoice": 12, "billing": 6, "deploy": 3}, cold_start=False)
    assert warm.value({"invoice", "other"}) == 1.0
    assert warm.value({"billing"}) == 0.5
    assert warm.value({"deploy", "billing"}) == 0.5  # the hottest topic it mentions
    assert warm.value({"unrelated"}) == 0.0
    summary = warm.summary(top=2)
    assert summary["top_topics"] == [
        {"term": "invoice", "count": 12, "share": pytest.approx(12 / 21, abs=1e-4)},
        {"term": "billing", "count": 6, "share": pytest.approx(6 / 21, abs=1e-4)},
    ]
    cold = Workload(recalls=4, counts={"invoice": 4}, cold_start=True)
    assert cold.value({"invoice"}) == 0.0
    assert cold.summary(top=3)["cold_start"] is True
