"""Relevance first (issue 15): recency, importance and strength reorder records only among those of nearly equal
relevance. Property: for any weights and any priors, a record whose relevance is at least 1 / (1 - δ) times
another's (δ = `prior_share(policy)` ≤ `prior_influence` = 0.1 by default, so a margin of 11 %) ranks above
it, and a record with no relevance never outranks one with some.

Why that margin: relevance is RRF normalised by its best value, and one rank further down one list moves it
by about 1.6 % near the top (1/61 vs 1/62). A margin of 11 % lets importance and recency reorder records a
few ranks apart (near ties, where "which one matters more" is the right tie-breaker) but never a record that
both lists put far lower — the "user prefers short answers" memory that matched no word of a database
question cannot climb above the three database facts."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_memory.domain.memory.policy import MemoryPolicy, RecallWeights
from agent_memory.domain.memory.recall import (
    Fused,
    prior_share,
    relevance_first,
    rerank,
    search_halves,
    select_top,
    together,
)
from agent_memory.domain.ports import Hit
from agent_memory.domain.records import MemoryRecord, MemoryType

NOW = datetime(2025, 6, 1, tzinfo=UTC)
RRF_K = 60
BEST = 2.0 / (RRF_K + 1)
unit = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)
weights = (
    st.tuples(unit, unit, unit, unit)
    .filter(lambda w: sum(w) > 0.01)
    .map(lambda w: RecallWeights(relevance=w[0], recency=w[1], importance=w[2], strength=w[3]))
)


def record(record_id: str, score: float, age_hours: float) -> MemoryRecord:
    at = NOW - timedelta(hours=age_hours)
    return MemoryRecord(
        id=record_id, tenant="acme", namespace="/p", type=MemoryType.DOMAIN_KNOWLEDGE, content=record_id,
        score=score, created_at=at, updated_at=at, last_access_at=at, valid_from=at, recorded_at=at,
    )  # fmt: skip


def fused(record_id: str, relevance: float) -> Fused:
    return Fused(record_id, relevance * BEST, None, None, None, None)


@settings(max_examples=300, deadline=None)
@given(
    w=weights,
    influence=st.floats(min_value=0.0, max_value=0.5),
    relevant=st.floats(min_value=0.01, max_value=1.0),
    ratio=st.floats(min_value=0.0, max_value=1.0),
    priors=st.tuples(unit, unit, st.floats(min_value=0.0, max_value=5000.0), st.floats(0.0, 5000.0)),
)
def test_no_weights_lift_a_record_over_one_with_clearly_higher_relevance(
    w, influence, relevant, ratio, priors
):
    policy = MemoryPolicy(weights=w, prior_influence=influence, rrf_k=RRF_K)
    delta = prior_share(policy)
    assert delta <= influence + 1e-12
    # the other record's relevance is at most (1 - δ) times the relevant one's: the margin (less a hair of
    # float rounding at the exact boundary)
    other = relevant * (1.0 - delta) * ratio * (1.0 - 1e-9)
    score_a, score_b, age_a, age_b = priors
    records = {"a": record("a", score_a, age_a), "b": record("b", score_b, age_b)}
    ranked = rerank([fused("b", other), fused("a", relevant)], records, policy, NOW)
    assert ranked[0].record.id == "a"


@given(relevance=unit, prior=unit, delta=st.floats(min_value=0.0, max_value=0.5))
def test_an_irrelevant_record_scores_zero_and_scores_stay_in_the_unit_interval(relevance, prior, delta):
    assert relevance_first(0.0, prior, delta) == 0.0
    score = relevance_first(relevance, prior, delta)
    assert relevance * (1.0 - delta) - 1e-12 <= score <= relevance + 1e-12


def test_a_high_importance_record_that_matched_nothing_stays_below_the_relevant_ones():
    """The issue's example: three database facts (~equal relevance, default importance) and a preference
    with importance 0.9 that only the vector half returned, at rank 4."""
    policy = MemoryPolicy()
    rrf = [1 / 61 + 1 / 61, 1 / 62 + 1 / 62, 1 / 63 + 1 / 63, 1 / 64]
    ids = ["db-engine", "migrations", "schema-review", "short-answers"]
    records = {i: record(i, 0.9 if i == "short-answers" else 0.5, 0.0) for i in ids}
    fused_list = [Fused(i, r, None, None, None, None) for i, r in zip(ids, rrf, strict=True)]
    ranked = rerank(fused_list, records, policy, NOW)
    assert [r.record.id for r in ranked][-1] == "short-answers"


@settings(max_examples=200, deadline=None)
@given(
    w=weights,
    influence=st.floats(min_value=0.0, max_value=0.5),
    rows=st.lists(
        st.tuples(unit, unit, st.floats(0.0, 500.0), st.booleans(), st.booleans()), min_size=0, max_size=60
    ),
    k=st.integers(min_value=1, max_value=25),
    threshold=st.sampled_from([0.0, 0.0, 0.1, 0.4]),
)
def test_bounded_hydration_returns_exactly_the_top_k_of_a_full_rerank(w, influence, rows, k, threshold):
    """select_top loads only candidates that can still reach the top k; the result is the full re-rank's."""
    policy = MemoryPolicy(weights=w, prior_influence=influence, rrf_k=RRF_K)
    items = [
        Fused(f"r{i:02d}", rel * BEST, None, None, None, None, rel if score_fused else None)
        for i, (rel, _, _, score_fused, _) in enumerate(rows)
    ]
    records = {
        f"r{i:02d}": record(f"r{i:02d}", importance, age)
        for i, (_, importance, age, _, filtered_out) in enumerate(rows)
        if not filtered_out
    }
    loaded: list[str] = []

    def load(ids: list[str]) -> dict[str, MemoryRecord]:
        loaded.extend(ids)
        return {i: records[i] for i in ids if i in records}

    expected = [s for s in rerank(items, records, policy, NOW) if s.score >= threshold][:k]
    got = select_top(items, load, policy, NOW, k=k, threshold=threshold)
    assert [(s.record.id, s.score) for s in got] == [(s.record.id, s.score) for s in expected]
    assert len(loaded) == len(set(loaded))


# ---------------------------------------------------------------------------------------- the two halves


def test_the_keyword_half_runs_while_the_query_is_embedded() -> None:
    """Hybrid recall overlaps its keyword half with the query embedding: the keyword half is started before
    the vector half finishes. Run one after the other, the keyword half would never see the event set."""
    vector_started = threading.Event()
    keyword_saw_vector_running = threading.Event()

    def vector_half() -> list[Hit]:
        vector_started.set()
        assert keyword_saw_vector_running.wait(timeout=10), "the keyword half did not run concurrently"
        return [Hit(record_id="v", score=0.9)]

    def keyword_half() -> list[Hit]:
        if vector_started.wait(timeout=10):
            keyword_saw_vector_running.set()
        return [Hit(record_id="k", score=3.0)]

    vector_hits, keyword_hits = search_halves(vector_half, keyword_half, overlap=True)
    assert [h.record_id for h in vector_hits] == ["v"]
    assert [h.record_id for h in keyword_hits] == ["k"]


def test_a_failing_half_fails_the_recall_after_both_finished() -> None:
    finished: list[str] = []

    def keyword_half() -> list[Hit]:
        finished.append("keyword")
        return []

    def broken_vector_half() -> list[Hit]:
        raise RuntimeError("embedder down")

    with pytest.raises(RuntimeError, match="embedder down"):
        search_halves(broken_vector_half, keyword_half, overlap=True)
    assert finished == ["keyword"]

    def broken_keyword_half() -> list[Hit]:
        raise ValueError("index down")

    with pytest.raises(ValueError, match="index down"):
        search_halves(lambda: [], broken_keyword_half, overlap=True)


def test_one_half_only_or_no_overlap_runs_inline() -> None:
    caller = threading.get_ident()
    seen: list[int] = []

    def keyword_half() -> list[Hit]:
        seen.append(threading.get_ident())
        return [Hit(record_id="k", score=1.0)]

    assert search_halves(None, keyword_half, overlap=True) == ([], [Hit(record_id="k", score=1.0)])
    assert search_halves(lambda: [], keyword_half) == (
        [],
        [Hit(record_id="k", score=1.0)],
    )  # in-process model
    assert seen == [caller, caller]
    assert search_halves(lambda: [Hit(record_id="v", score=0.5)], None, overlap=True)[1] == []


def test_together_runs_independent_calls_at_once_when_they_wait_on_the_network() -> None:
    # Each call waits for all three to have started: run one after the other, the barrier would break.
    started = threading.Barrier(3, timeout=30)
    ran: list[int] = []

    def call(n: int) -> None:
        started.wait()
        ran.append(n)

    together([lambda: call(1), lambda: call(2), lambda: call(3)], overlap=True)
    assert sorted(ran) == [1, 2, 3]


def test_together_raises_the_first_error_after_every_call_finished() -> None:
    finished: list[str] = []

    def slow() -> None:
        time.sleep(0.05)
        finished.append("slow")

    def broken() -> None:
        raise RuntimeError("table throttled")

    with pytest.raises(RuntimeError, match="table throttled"):
        together([broken, slow, slow], overlap=True)
    assert finished == ["slow", "slow"]  # nothing outlives the request


def test_together_without_overlap_runs_in_order_on_the_caller() -> None:
    caller = threading.get_ident()
    seen: list[tuple[int, int]] = []
    together(
        [lambda: seen.append((1, threading.get_ident())), lambda: seen.append((2, threading.get_ident()))],
        overlap=False,
    )
    assert seen == [(1, caller), (2, caller)]
