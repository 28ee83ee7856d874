"""The validate stage of an import: recall a sample of the imported preferences by a paraphrased query (hit
rate), and recall an item that was skipped as expired by its own text to confirm it stayed out."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..memory.service import RecallInput
from ..records import content_hash
from ..text import query_terms
from .model import DecayCheck, RecallCheck, RecallProbe

if TYPE_CHECKING:
    from .translate import Translation

PREFERENCE_SAMPLE = 20
RECALL_K = 5
_PARAPHRASE_DROP = frozenset(
    [
        "i",
        "me",
        "my",
        "mine",
        "we",
        "our",
        "you",
        "your",
        "the",
        "a",
        "an",
        "is",
        "are",
        "am",
        "be",
        "to",
        "of",
        "and",
        "or",
        "in",
        "on",
        "at",
        "for",
        "with",
        "it",
        "this",
        "that",
        "always",
        "never",
        "please",
        "prefer",
        "prefers",
        "preferred",
        "like",
        "likes",
        "want",
        "wants",
        "use",
        "uses",
    ]
)


def run_checks(run: Translation) -> None:
    # Still active at the end: a preference a later item of the same source superseded is not expected back.
    current = {r.id for r in run.s.active_records(run.tenant, [p[2] for p in run.preferences])}
    sample = sorted(p for p in run.preferences if p[2] in current)[:PREFERENCE_SAMPLE]
    check = RecallCheck()
    for ref, namespace, record_id, content in sample:
        query = paraphrase(content)
        results = run.s.memory.recall(
            run.tenant, RecallInput(query=query, namespaces=(namespace,), k=RECALL_K)
        )
        hit = any(r.record.id == record_id for r in results.results)
        check.probes.append(RecallProbe(ref=ref, query=query, hit=hit))
    check.sampled = len(check.probes)
    check.hits = sum(1 for p in check.probes if p.hit)
    check.hit_rate = round(check.hits / check.sampled, 4) if check.sampled else None
    run.report.preference_recall = check
    run.report.decay = _expiry_check(run)


def _expiry_check(run: Translation) -> DecayCheck:
    item = run.expired
    if item is None:
        return DecayCheck(note="no item of the source was past its expiration date")
    query = item.content[:500]
    results = run.s.memory.recall(
        run.tenant, RecallInput(query=query, namespaces=(run.expired_namespace,), k=RECALL_K)
    )
    wanted = content_hash(item.content)
    back = any(r.record.content_hash == wanted for r in results.results)
    return DecayCheck(
        ref=item.ref,
        query=query,
        excluded=not back,
        note="skipped as past its expiration date at import; recalled by its own text"
        + (": FOUND" if back else ""),
    )


def paraphrase(text: str) -> str:
    """A reworded query for a preference: its content words in reverse order after a question frame, without
    the first-person and preference verbs (so the query does not repeat the memory's wording)."""
    words = [w for w in query_terms(text) if w not in _PARAPHRASE_DROP and len(w) > 2]
    kept = list(reversed(words[:8])) or query_terms(text)[:8]
    return "what does the user want regarding " + " ".join(kept)
