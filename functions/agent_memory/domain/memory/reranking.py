"""The optional second stage of recall (issue 34): a reranker (a cross-encoder behind an API, the `Reranker`
port) reads the question with the text of the hybrid ranking's top candidates and puts them in its order; the
candidates past that window keep their hybrid order after them.

Asked for per request (`RecallInput.rerank`, default off). A reranker that fails — throttled, timed out, down,
refusing — never fails the recall: the hybrid order stands and the outcome says why (`RerankOutcome.fallback`).
A reranker the deployment does not have is refused up front (422), before any work, so a caller never pays
for a recall it did not ask for."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from ..errors import UpstreamFailed, UpstreamUnavailable, ValidationFailed
from .ports import RerankedDocument, Reranker
from .recall import ScoredRecord

logger = logging.getLogger(__name__)

RERANKERS = ("bedrock",)
"""The rerankers a recall may name. `bedrock`: Amazon Bedrock's Rerank API (the AWS runtime, when the stack
enables it)."""


@dataclass(frozen=True)
class RerankOutcome:
    """What the second stage did for one recall."""

    reranker: str
    model: str
    applied: bool
    """True when the results are in the reranker's order; False when the hybrid order was kept (`fallback`)."""
    candidates: int
    """How many of the hybrid ranking's top candidates were sent (one billed call)."""
    latency_ms: float
    fallback: str | None = None
    """Why the hybrid order was kept: the reranker's error, or an answer that did not fit the candidates."""
    scores: dict[str, float] = field(default_factory=dict)
    """The reranker's relevance per record id (only the candidates it scored)."""


def chosen_reranker(name: str | None, rerankers: Mapping[str, Reranker]) -> Reranker | None:
    """The reranker a recall names (None: none asked). 422 for an unknown name or one this deployment lacks."""
    if name is None:
        return None
    if name not in RERANKERS:
        raise ValidationFailed(
            f"rerank must be one of {list(RERANKERS)} or left out; got {name!r}", rerank=name
        )
    reranker = rerankers.get(name)
    if reranker is None:
        raise ValidationFailed(
            f"rerank {name!r} is not available on this deployment: it runs on the AWS runtime when the stack "
            "enables it (the `rerank` setting with a model id; docs/reference/recall.md). Recall without "
            "`rerank`, which ranks with the hybrid ranking alone.",
            rerank=name,
            available=sorted(rerankers),
        )
    return reranker


def rerank_top(
    reranker: Reranker,
    query: str,
    ranked: Sequence[ScoredRecord],
    depth: int,
    timer: Callable[[], float] = time.perf_counter,
) -> tuple[list[ScoredRecord], RerankOutcome]:
    """`ranked` (the hybrid order) with its first `depth` records in the reranker's order, the rest after them
    unchanged; on any reranker failure `ranked` unchanged and the reason in the outcome."""
    head, tail = list(ranked[:depth]), list(ranked[depth:])
    started = timer()

    def outcome(
        applied: bool, fallback: str | None = None, scores: dict[str, float] | None = None
    ) -> RerankOutcome:
        elapsed = round((timer() - started) * 1000, 3)
        return RerankOutcome(
            reranker.name, reranker.model, applied, len(head), elapsed, fallback, scores or {}
        )

    if not head:
        return list(ranked), outcome(False, "no candidates to rerank")
    try:
        answer = reranker.rerank(query, [item.record.content for item in head])
    except (UpstreamUnavailable, UpstreamFailed) as error:
        logger.warning("rerank %s failed; the hybrid order stands: %s", reranker.name, error.message)
        return list(ranked), outcome(False, f"{error.code}: {error.message}")
    order = _order(answer, len(head))
    if order is None:
        logger.warning("rerank %s answered indexes that do not fit %d candidates", reranker.name, len(head))
        return list(ranked), outcome(False, "the reranker's answer did not fit the candidates sent")
    scores = {head[item.index].record.id: item.score for item in answer}
    return [head[i] for i in order] + tail, outcome(True, scores=scores)


def _order(answer: Sequence[RerankedDocument], count: int) -> list[int] | None:
    """The candidates' positions in the reranker's order, any it left out after them in hybrid order; None for
    an answer naming a position twice or one outside the candidates."""
    seen: list[int] = []
    for item in answer:
        if not 0 <= item.index < count or item.index in seen:
            return None
        seen.append(item.index)
    return seen + [i for i in range(count) if i not in set(seen)]
