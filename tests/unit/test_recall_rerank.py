"""Recall's optional second stage (domain/memory/reranking.py): a reranker reorders the hybrid ranking's top
`rerank_depth` candidates, the rest keep their order after them; a failing reranker never fails the recall
(the hybrid order stands and the outcome says why); a reranker the deployment lacks is refused (422).

Real local adapters (SQLite, the in-process index, the hashing embedder); the reranker is a port double whose
answers the test chooses, so every order below is computed from what it was sent."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from agent_memory.adapters.local.embedders import HashingEmbedder
from agent_memory.adapters.local.search_index import LocalSearchIndex
from agent_memory.adapters.local.sqlite_store import SqliteRecordStore
from agent_memory.domain.errors import UpstreamFailed, UpstreamUnavailable, ValidationFailed
from agent_memory.domain.memory.policy import MemoryPolicy
from agent_memory.domain.memory.ports import RerankedDocument
from agent_memory.domain.memory.reranking import rerank_top
from agent_memory.domain.memory.service import MemoryService, RecallInput, RememberInput

NS = "/projects/garden"
T = "acme"
FACTS = [f"The garden bed number {i} grows tomatoes and basil in row {i}" for i in range(12)]


class ScriptedReranker:
    """Scores each document by whether it holds `favourite` (then by reverse position), or raises `error`."""

    name = "bedrock"
    model = "amazon.rerank-v1:0"

    def __init__(self, favourite: str = "", error: Exception | None = None, answer=None) -> None:
        self.favourite, self.error, self.answer = favourite, error, answer
        self.calls: list[tuple[str, list[str]]] = []

    def rerank(self, query: str, documents: Sequence[str]) -> list[RerankedDocument]:
        self.calls.append((query, list(documents)))
        if self.error is not None:
            raise self.error
        if self.answer is not None:
            return self.answer
        scored = [
            RerankedDocument(i, (1.0 if self.favourite and self.favourite in text else 0.0) + i / 1000)
            for i, text in enumerate(documents)
        ]
        return sorted(scored, key=lambda d: -d.score)


def make_service(tmp_path, clock, reranker=None, **policy) -> MemoryService:
    service = MemoryService(
        store=SqliteRecordStore(tmp_path / "memory.db"),
        index=LocalSearchIndex(tmp_path / "index"),
        embedder=HashingEmbedder(),
        clock=clock,
        policy=MemoryPolicy(**policy),
        rerankers={"bedrock": reranker} if reranker else None,
    )
    for fact in FACTS:
        service.remember(T, RememberInput(content=fact, namespace=NS), actor="test")
    return service


def recall(service: MemoryService, **kwargs):
    return service.recall(T, RecallInput(query="which garden bed grows tomatoes", namespaces=(NS,), **kwargs))


def test_the_reranker_orders_the_top_candidates_and_scores_are_reported(tmp_path, clock):
    reranker = ScriptedReranker(favourite="row 7")
    service = make_service(tmp_path, clock, reranker, rerank_depth=10)
    hybrid = [item.record.content for item in recall(service, k=10).results]
    assert not reranker.calls, "no reranker call unless the recall asks for one"

    result = recall(service, k=3, rerank="bedrock")
    ((query, sent),) = reranker.calls
    assert query == "which garden bed grows tomatoes"
    assert sent == hybrid, "the hybrid ranking's top rerank_depth candidates, in hybrid order"
    contents = [item.record.content for item in result.results]
    assert contents[0] == FACTS[7], "the reranker's favourite leads"
    expected_rest = [text for text in reversed(hybrid) if text != FACTS[7]][:2]
    assert contents[1:] == expected_rest, "then the reranker's order (its score falls with the position)"
    outcome = result.rerank
    assert outcome.applied and outcome.fallback is None and outcome.candidates == 10
    assert outcome.model == "amazon.rerank-v1:0"
    assert outcome.scores[result.results[0].record.id] == pytest.approx(1.0 + hybrid.index(FACTS[7]) / 1000)


def test_candidates_past_the_window_keep_their_hybrid_order_after_it(tmp_path, clock):
    reranker = ScriptedReranker()
    service = make_service(tmp_path, clock, reranker, rerank_depth=4)
    hybrid = [item.record.id for item in recall(service, k=8).results]
    result = recall(service, k=8, rerank="bedrock")
    assert len(reranker.calls[0][1]) == 4
    assert [item.record.id for item in result.results] == list(reversed(hybrid[:4])) + hybrid[4:]
    assert set(result.rerank.scores) == set(hybrid[:4])


@pytest.mark.parametrize(
    "error",
    [
        UpstreamUnavailable("bedrock-agent-runtime is throttling (ThrottlingException) during Rerank"),
        UpstreamFailed("the reranker refused the request (AccessDeniedException)"),
    ],
)
def test_a_failing_reranker_keeps_the_hybrid_order_and_says_why(tmp_path, clock, error):
    service = make_service(tmp_path, clock, ScriptedReranker(error=error))
    hybrid = [item.record.id for item in recall(service, k=5).results]
    result = recall(service, k=5, rerank="bedrock")
    assert [item.record.id for item in result.results] == hybrid
    assert not result.rerank.applied
    assert result.rerank.fallback == f"{error.code}: {error.message}"
    assert result.rerank.scores == {}


@pytest.mark.parametrize(
    "answer",
    [[RerankedDocument(0, 0.9), RerankedDocument(0, 0.8)], [RerankedDocument(99, 0.9)]],
    ids=["repeated index", "index out of range"],
)
def test_an_answer_that_does_not_fit_the_candidates_keeps_the_hybrid_order(tmp_path, clock, answer):
    service = make_service(tmp_path, clock, ScriptedReranker(answer=answer))
    hybrid = [item.record.id for item in recall(service, k=5).results]
    result = recall(service, k=5, rerank="bedrock")
    assert [item.record.id for item in result.results] == hybrid
    assert result.rerank.fallback == "the reranker's answer did not fit the candidates sent"


def test_a_partial_answer_puts_the_unscored_candidates_after_in_hybrid_order(tmp_path, clock):
    service = make_service(
        tmp_path, clock, ScriptedReranker(answer=[RerankedDocument(2, 0.5)]), rerank_depth=4
    )
    hybrid = [item.record.id for item in recall(service, k=4).results]
    result = recall(service, k=4, rerank="bedrock")
    assert [item.record.id for item in result.results] == [hybrid[2], hybrid[0], hybrid[1], hybrid[3]]
    assert result.rerank.applied


def test_a_reranker_the_deployment_lacks_is_refused_before_any_work(tmp_path, clock):
    service = make_service(tmp_path, clock)
    with pytest.raises(ValidationFailed) as refused:
        recall(service, rerank="bedrock")
    assert "not available on this deployment" in refused.value.message
    assert "AWS runtime" in refused.value.message
    assert refused.value.details == {"rerank": "bedrock", "available": []}
    with pytest.raises(ValidationFailed, match="rerank must be one of"):
        recall(service, rerank="cross-encoder")


def test_nothing_to_rerank_makes_no_call():
    reranker = ScriptedReranker()
    ranked, outcome = rerank_top(reranker, "anything", [], depth=50)
    assert ranked == [] and not reranker.calls
    assert not outcome.applied and outcome.candidates == 0 and outcome.fallback == "no candidates to rerank"
